/* mutagym
[[launch]]
kernel = "l1_rows_pairwise"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols", "eps"]
*/
// One thread per row, pairwise (cascade) summation of |x| in float32: leaves of 16 elements,
// merged like a binary counter so each level holds the sum of 2^l leaves; then
// out = x * (1 / max(norm, eps)).
#define LEAF 16
#define LEVELS 24

extern "C" __global__ void l1_rows_pairwise(const float* __restrict__ x, float* __restrict__ out, int rows,
                                            int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    float stack[LEVELS];
    unsigned int leaves = 0;
    int c = 0;
    for (; c + LEAF <= cols; c += LEAF) {
        float leaf = 0.0f;
        for (int i = 0; i < LEAF; ++i) leaf += fabsf(xr[c + i]);
        int level = 0;
        for (unsigned int carry = leaves; carry & 1u; carry >>= 1) leaf += stack[level++];
        stack[level] = leaf;
        ++leaves;
    }
    float norm = 0.0f;
    for (; c < cols; ++c) norm += fabsf(xr[c]);
    for (int level = 0; level < LEVELS; ++level) {
        if ((leaves >> level) & 1u) norm += stack[level];
    }
    const float inv = 1.0f / fmaxf(norm, eps);
    for (c = 0; c < cols; ++c) outr[c] = xr[c] * inv;
}
