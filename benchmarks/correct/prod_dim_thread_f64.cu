/* mutagym
[[launch]]
kernel = "prod_rows_f64"
grid = ["ceil_div(rows, 128)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row (rows are at most 256 long): the product left to right in double, rounded to
// float once. No intermediate product of float32 factors can overflow or underflow double where
// the float64 reference does not.
extern "C" __global__ void prod_rows_f64(const float* __restrict__ x, float* __restrict__ out,
                                         int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    double p = 1.0;
    for (int c = 0; c < cols; ++c) p *= (double)xr[c];
    out[row] = (float)p;
}
