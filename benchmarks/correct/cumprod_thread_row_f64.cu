/* mutagym
[[launch]]
kernel = "cumprod_rows_f64"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row: the running product left to right in double (rows are at most 1024 long),
// each prefix rounded to float once.
extern "C" __global__ void cumprod_rows_f64(const float* __restrict__ x, float* __restrict__ out, int rows,
                                            int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const size_t base = (size_t)row * cols;
    double p = 1.0;
    for (int c = 0; c < cols; ++c) {
        p *= (double)x[base + c];
        out[base + c] = (float)p;
    }
}
