/* mutagym
[[launch]]
kernel = "rmsnorm_half_rows"
grid = ["rows"]
block = [128]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// RMSNorm over the last dimension in half precision: one block per row, float accumulation.
//   ms  = sum(float(x)^2) / cols                  (shared-memory tree reduction in float)
//   out = half(float(x) * rsqrt(ms + eps) * float(weight[c]))   (one rounding to half)
#include <cuda_fp16.h>
#define RMS_BLOCK 128

extern "C" __global__ void rmsnorm_half_rows(const __half* __restrict__ x, const __half* __restrict__ weight,
                                             __half* __restrict__ out, int rows, int cols, float eps) {
    __shared__ float red[RMS_BLOCK];
    const int row = blockIdx.x;
    if (row >= rows) return;  // uniform across the block
    const int tid = threadIdx.x;
    const __half* xr = x + (size_t)row * cols;
    __half* yr = out + (size_t)row * cols;

    float sq = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        const float v = __half2float(xr[c]);
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
        yr[c] = __float2half_rn(__half2float(xr[c]) * inv_rms * __half2float(weight[c]));
    }
}
