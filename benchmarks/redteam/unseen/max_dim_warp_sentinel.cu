/* mutagym
[[launch]]
kernel = "row_max_warp"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, eight rows per block: each lane scans a strided slice, then an xor butterfly
// takes the maximum across the warp.
#define NEG_BIG -1.0e30f

extern "C" __global__ void row_max_warp(const float* __restrict__ x, float* __restrict__ out,
                                        int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float m = NEG_BIG;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) out[row] = m;
}
