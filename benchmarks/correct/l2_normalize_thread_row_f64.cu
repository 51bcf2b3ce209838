/* mutagym
[[launch]]
kernel = "l2_rows_f64"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols", "eps"]
*/
// One thread per row in double: the sum of squares left to right (no float32 square can
// overflow or underflow double), norm = max(sqrt(sum), eps), out = x / norm rounded once.
extern "C" __global__ void l2_rows_f64(const float* __restrict__ x, float* __restrict__ out, int rows, int cols,
                                       float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    double s = 0.0;
    for (int c = 0; c < cols; ++c) s += (double)xr[c] * (double)xr[c];
    const double norm = fmax(sqrt(s), (double)eps);
    for (int c = 0; c < cols; ++c) outr[c] = (float)((double)xr[c] / norm);
}
