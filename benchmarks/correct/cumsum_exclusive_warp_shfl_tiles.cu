/* mutagym
[[launch]]
kernel = "cumsum_exclusive_warp"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, eight rows per block, tiles of 32: an inclusive float32 __shfl_up_sync scan
// of the tile, shifted one lane up (lane 0 takes 0) to make it exclusive, plus the carry of the
// earlier tiles, kept in double and grown by the tile's total broadcast from lane 31. (With a
// float32 carry, the 8,192 carries of a 2^18-long row cost a relative error of 0.03 where a
// prefix crosses zero: measured on large_magnitude rows.)
extern "C" __global__ void cumsum_exclusive_warp(const float* __restrict__ x, float* __restrict__ out, int rows,
                                                 int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (row >= rows) return;   // whole warps leave
    const size_t base = (size_t)row * cols;
    double carry = 0.0;
    for (int tile = 0; tile < cols; tile += 32) {
        const int c = tile + lane;
        float incl = c < cols ? x[base + c] : 0.0f;
        for (int step = 1; step < 32; step <<= 1) {
            const float up = __shfl_up_sync(0xffffffffu, incl, step);
            if (lane >= step) incl += up;
        }
        const float excl = __shfl_up_sync(0xffffffffu, incl, 1);
        if (c < cols) out[base + c] = (float)(carry + (lane > 0 ? (double)excl : 0.0));
        carry += (double)__shfl_sync(0xffffffffu, incl, 31);
    }
}
