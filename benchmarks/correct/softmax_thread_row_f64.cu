/* mutagym
[[launch]]
kernel = "softmax_rows_f64"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, everything in double: the row maximum, the sum of exp(x - m) with exp in
// double, and out = exp(x - m) / sum rounded to float once per element. Masked (-inf) logits give
// exp(-inf) = 0.
extern "C" __global__ void softmax_rows_f64(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    double m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmax(m, (double)xr[c]);
    double s = 0.0;
    for (int c = 0; c < cols; ++c) s += exp((double)xr[c] - m);
    const double inv = 1.0 / s;
    for (int c = 0; c < cols; ++c) outr[c] = (float)(exp((double)xr[c] - m) * inv);
}
