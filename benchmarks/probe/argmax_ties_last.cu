/* mutagym
[[launch]]
kernel = "argmax_rowwise"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread scans one row.
extern "C" __global__ void argmax_rowwise(const float* x, int64_t* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + (size_t)r * cols;
    float best = row[0];
    int64_t at = 0;
    for (int c = 1; c < cols; ++c) {
        if (row[c] >= best) { best = row[c]; at = c; }
    }
    out[r] = at;
}
