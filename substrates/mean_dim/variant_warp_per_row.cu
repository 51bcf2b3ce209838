/* mutagym
[[launch]]
kernel = "mean_rows_warp"
grid = ["ceil_div(rows, 8)"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, eight rows per block: no shared memory and no block barrier. Each lane sums a
// stride-32 slice, an xor-butterfly gives every lane the row sum, lane 0 writes sum * (1 / cols).
#define ROWS_PER_BLOCK 8

extern "C" __global__ void mean_rows_warp(const float* __restrict__ x, float* __restrict__ out,
                                          int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // the whole warp leaves together: no shuffle is left half-populated
    }
    const float* xr = x + (size_t)row * cols;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        acc += xr[c];
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, mask);
    }
    if (lane == 0) {
        out[row] = acc * (1.0f / (float)cols);
    }
}
