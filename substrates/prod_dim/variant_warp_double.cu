/* mutagym
[[launch]]
kernel = "prod_rows_warp"
grid = ["ceil_div(rows, 8)"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, eight rows per block. Lanes multiply a stride-32 slice in double precision and
// a shuffle-down tree of doubles forms the row product, rounded to float once at the end.
#define ROWS_PER_BLOCK 8

extern "C" __global__ void prod_rows_warp(const float* __restrict__ x, float* __restrict__ out,
                                          int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const float* xr = x + (size_t)row * cols;
    double acc = 1.0;
    for (int c = lane; c < cols; c += 32) {
        acc *= (double)xr[c];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc *= __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if (lane == 0) {
        out[row] = (float)acc;
    }
}
