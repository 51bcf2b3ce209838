/* mutagym
[[launch]]
kernel = "rmsnorm_rows_f64"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// One thread per row: the sum of squares left to right in double, inv = 1 / sqrt(ms + eps) in
// double, and out = x * inv * weight rounded to float once per element.
extern "C" __global__ void rmsnorm_rows_f64(const float* __restrict__ x, const float* __restrict__ weight,
                                            float* __restrict__ out, int rows, int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    double s = 0.0;
    for (int c = 0; c < cols; ++c) s += (double)xr[c] * (double)xr[c];
    const double inv = 1.0 / sqrt(s / cols + (double)eps);
    for (int c = 0; c < cols; ++c) outr[c] = (float)((double)xr[c] * inv * (double)weight[c]);
}
