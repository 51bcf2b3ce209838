/* mutagym
[[launch]]
kernel = "cumsum_rows_f64"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row: the running sum left to right in double, each prefix rounded to float on
// its way out. No tiles, no carry between tiles.
extern "C" __global__ void cumsum_rows_f64(const float* __restrict__ x, float* __restrict__ out, int rows,
                                           int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const size_t base = (size_t)row * cols;
    double s = 0.0;
    for (int c = 0; c < cols; ++c) {
        s += (double)x[base + c];
        out[base + c] = (float)s;
    }
}
