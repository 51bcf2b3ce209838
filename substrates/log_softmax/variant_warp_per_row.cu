/* mutagym
[[launch]]
kernel = "log_softmax_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, four rows per block, no shared memory: lanes take stride-32 slices, the row
// maximum and the sum of exponentials are xor-shuffle reductions; the sum and its log are
// taken in double.
#include <math.h>
#define ROWS_PER_BLOCK 4

extern "C" __global__ void log_softmax_warp(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) {
        m = fmaxf(m, xr[c]);
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    }

    double s = 0.0;
    for (int c = lane; c < cols; c += 32) {
        s += (double)expf(xr[c] - m);
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, mask);
    }
    const float shift = (float)((double)m + log(s));
    for (int c = lane; c < cols; c += 32) {
        outr[c] = xr[c] - shift;
    }
}
