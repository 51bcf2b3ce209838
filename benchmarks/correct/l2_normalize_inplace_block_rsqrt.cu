/* mutagym
inout = ["x"]

[[launch]]
kernel = "l2_inplace_rsqrt"
grid = ["rows"]
block = [128]
args = ["x", "cols", "eps"]
*/
// In place, one 128-thread block per row: the sum of squares over a strided slice, a shuffle-down
// tree in each warp and warp 0 over the four warp sums, then every element is multiplied by
// rsqrtf(max(sum, eps^2)) (the reciprocal square root approximation, ~2 ulp; max(sqrt(s), eps)
// = sqrt(max(s, eps^2)) since both are non-negative; eps^2 = 1e-24 is a normal float).
#define BLOCK 128

extern "C" __global__ void l2_inplace_rsqrt(float* x, int cols, float eps) {
    __shared__ float warp_sum[BLOCK / 32];
    __shared__ float inv;
    float* xr = x + (size_t)blockIdx.x * cols;
    const int tid = threadIdx.x;
    float s = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) s += xr[c] * xr[c];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((tid & 31) == 0) warp_sum[tid >> 5] = s;
    __syncthreads();
    if (tid < 32) {
        float v = tid < BLOCK / 32 ? warp_sum[tid] : 0.0f;
        for (int offset = 2; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (tid == 0) inv = rsqrtf(fmaxf(v, eps * eps));
    }
    __syncthreads();
    const float scale = inv;
    for (int c = tid; c < cols; c += BLOCK) xr[c] *= scale;
}
