/* mutagym
[[launch]]
kernel = "rmsnorm_rows"
grid = ["rows"]
block = [128]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// RMSNorm over the last dimension: one block per row.
//   ms  = sum(x^2) / cols                         (shared-memory tree reduction)
//   out = x * rsqrt(ms + eps) * weight[c]
// The block size must be a power of two (the tree halves it); threads stride over the columns,
// so any cols works, including cols < blockDim.
#define RMS_BLOCK 128

extern "C" __global__ void rmsnorm_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                        float* __restrict__ out, int rows, int cols, float eps) {
    __shared__ float red[RMS_BLOCK];
    const int row = blockIdx.x;
    if (row >= rows) return;  // uniform across the block: no thread reaches a barrier alone
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* yr = out + (size_t)row * cols;

    float sq = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        const float v = xr[c];
        sq += v * v;
    }
    red[tid] = sq;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        __syncthreads();
    }
    const float inv_rms = rsqrtf(red[0] / (float)cols + eps);

    for (int c = tid; c < cols; c += blockDim.x) {
        yr[c] = xr[c] * inv_rms * weight[c];
    }
}
