/* mutagym
[[launch]]
kernel = "max_rows_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, four rows per 128-thread block; lanes keep a running max from -INFINITY and an
// xor-butterfly of fmaxf leaves the row maximum in every lane.
#include <math.h>
#define ROWS_PER_BLOCK 4

extern "C" __global__ void max_rows_warp(const float* __restrict__ x, float* __restrict__ out,
                                         int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const float* xr = x + (size_t)row * cols;
    float best = -INFINITY;
    for (int c = lane; c < cols; c += 32) {
        best = fmaxf(best, xr[c]);
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, mask));
    }
    if (lane == 0) {
        out[row] = best;
    }
}
