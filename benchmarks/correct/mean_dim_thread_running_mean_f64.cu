/* mutagym
[[launch]]
kernel = "mean_rows_running"
grid = ["ceil_div(rows, 32)"]
block = [32]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, an online (running) mean in double: m += (x - m) / k after the k-th
// element. It never forms the row sum. In float32 the increments (x - m) / k fall below half an
// ulp of m for long rows and the mean would stop moving; in double they do not for any row of
// at most 2^20 float32 values.
extern "C" __global__ void mean_rows_running(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    double m = 0.0;
    for (int c = 0; c < cols; ++c) m += ((double)xr[c] - m) / (double)(c + 1);
    out[row] = (float)m;
}
