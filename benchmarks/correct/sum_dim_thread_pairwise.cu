/* mutagym
[[launch]]
kernel = "sum_rows_pairwise"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, pairwise (cascade) summation in float32: the row is cut into leaves of 8
// elements summed left to right, and the leaf sums are merged like a binary counter (a stack of
// partial sums, level l holding the sum of 2^l leaves), so the rounding error grows with
// log2(cols / 8) instead of cols. No shared memory, no barrier.
#define LEAF 8
#define LEVELS 24   // 2^24 leaves of 8 cover far more than 2^20 columns

extern "C" __global__ void sum_rows_pairwise(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float stack[LEVELS];
    unsigned int leaves = 0;   // number of leaves merged so far: its set bits are the occupied levels
    int c = 0;
    for (; c + LEAF <= cols; c += LEAF) {
        float leaf = 0.0f;
        for (int i = 0; i < LEAF; ++i) leaf += xr[c + i];
        int level = 0;
        for (unsigned int carry = leaves; carry & 1u; carry >>= 1) {   // merge equal-sized sums
            leaf = stack[level] + leaf;
            ++level;
        }
        stack[level] = leaf;
        ++leaves;
    }
    float tail = 0.0f;
    for (; c < cols; ++c) tail += xr[c];
    float total = tail;
    for (int level = 0; level < LEVELS; ++level) {   // smallest partial sums first
        if ((leaves >> level) & 1u) total = stack[level] + total;
    }
    out[row] = total;
}
