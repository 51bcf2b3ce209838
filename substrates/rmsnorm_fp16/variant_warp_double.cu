/* mutagym
[[launch]]
kernel = "rmsnorm_half_warp"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// Correct variant with different numerics: one warp per row, each lane accumulates in double,
// an xor-butterfly of double partials, then the scale in double before one rounding to half.
#include <cuda_fp16.h>

extern "C" __global__ void rmsnorm_half_warp(const __half* __restrict__ x, const __half* __restrict__ weight,
                                             __half* __restrict__ out, int rows, int cols, float eps) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + warp;
    if (row >= rows) return;  // uniform across the warp: no lane waits for one that left
    const __half* xr = x + (size_t)row * cols;
    __half* yr = out + (size_t)row * cols;

    double sq = 0.0;
    for (int c = lane; c < cols; c += 32) {
        const double v = (double)__half2float(xr[c]);
        sq += v * v;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sq += __shfl_xor_sync(0xffffffffu, sq, offset);
    }
    const double inv_rms = 1.0 / sqrt(sq / (double)cols + (double)eps);

    for (int c = lane; c < cols; c += 32) {
        yr[c] = __double2half((double)__half2float(xr[c]) * inv_rms * (double)__half2float(weight[c]));
    }
}
