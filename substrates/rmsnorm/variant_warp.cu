/* mutagym
[[launch]]
kernel = "rmsnorm_warp"
grid = ["rows"]
block = [256]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// RMSNorm, variant: 256-thread blocks; each warp reduces its sum of squares with a butterfly of
// __shfl_xor_sync (the sum ends in every lane), lane 0 stores it in shared memory, and every
// thread adds the 8 warp sums in the same order.
#define RW_BLOCK 256
#define RW_WARPS (RW_BLOCK / 32)

__device__ __forceinline__ float warp_allreduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void rmsnorm_warp(const float* __restrict__ x, const float* __restrict__ weight,
                                        float* __restrict__ out, int rows, int cols, float eps) {
    __shared__ float s_sq[RW_WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;
    float* yr = out + (size_t)row * cols;

    float sq = 0.0f;
    for (int c = tid; c < cols; c += RW_BLOCK) {
        const float v = xr[c];
        sq += v * v;
    }
    sq = warp_allreduce_sum(sq);
    if (lane == 0) s_sq[warp] = sq;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < RW_WARPS; ++w) {
        total += s_sq[w];
    }
    const float inv_rms = rsqrtf(total / (float)cols + eps);

    for (int c = tid; c < cols; c += RW_BLOCK) {
        yr[c] = xr[c] * inv_rms * weight[c];
    }
}
