/* mutagym
[[launch]]
kernel = "cumsum_warp_chunks"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, four rows per block; the row is walked in tiles of 32 x 8 elements where
// lane l owns the 8 consecutive elements 8l .. 8l + 7 of the tile: a sequential scan of its own
// 8, an inclusive __shfl_up_sync scan of the 32 lane totals, and the tile's carry (the running
// total, broadcast from lane 31) added on the way out. Float32 throughout.
#define PER 8
#define TILE (32 * PER)

extern "C" __global__ void cumsum_warp_chunks(const float* __restrict__ x, float* __restrict__ out, int rows,
                                              int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= rows) return;   // whole warps leave
    const size_t base = (size_t)row * cols;
    float carry = 0.0f;
    for (int tile = 0; tile < cols; tile += TILE) {
        const int first = tile + lane * PER;
        float v[PER];
        float run = 0.0f;
        for (int j = 0; j < PER; ++j) {
            run += (first + j < cols) ? x[base + first + j] : 0.0f;
            v[j] = run;
        }
        float incl = run;
        for (int step = 1; step < 32; step <<= 1) {
            const float up = __shfl_up_sync(0xffffffffu, incl, step);
            if (lane >= step) incl += up;
        }
        const float excl = __shfl_up_sync(0xffffffffu, incl, 1);   // the lane totals before this lane
        const float before = carry + (lane > 0 ? excl : 0.0f);
        for (int j = 0; j < PER; ++j) {
            if (first + j < cols) out[base + first + j] = before + v[j];
        }
        carry += __shfl_sync(0xffffffffu, incl, 31);
    }
}
