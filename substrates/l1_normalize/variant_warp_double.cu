/* mutagym
[[launch]]
kernel = "l1_normalize_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols", "eps"]
*/
// One warp per row, four rows per block. Lanes sum |x| over stride-32 slices in double, an
// xor-butterfly completes the norm, and every lane scales its slice by 1 / max(norm, eps).
#include <math.h>
#define ROWS_PER_BLOCK 4

extern "C" __global__ void l1_normalize_warp(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    double acc = 0.0;
    for (int c = lane; c < cols; c += 32) {
        acc += fabs((double)xr[c]);
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, mask);
    }
    const float inv = (float)(1.0 / fmax(acc, (double)eps));
    for (int c = lane; c < cols; c += 32) {
        outr[c] = xr[c] * inv;
    }
}
