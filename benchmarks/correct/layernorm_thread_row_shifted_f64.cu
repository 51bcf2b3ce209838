/* mutagym
[[launch]]
kernel = "layernorm_rows_shifted"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// One thread per row, one pass for the statistics in double with a shift: with K = x[row, 0],
// s1 = sum(x - K) and s2 = sum((x - K)^2), mean = K + s1 / n and var = s2 / n - (s1 / n)^2. The
// shift makes the one-pass formula safe however large the mean is against the spread (the
// cancellation that ruins E[x^2] - E[x]^2 is gone when K is inside the data), and double keeps
// the rest. A second pass writes (x - mean) * rstd * weight + bias.
extern "C" __global__ void layernorm_rows_shifted(const float* __restrict__ x, const float* __restrict__ weight,
                                                  const float* __restrict__ bias, float* __restrict__ out,
                                                  int rows, int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    const double k = (double)xr[0];
    double s1 = 0.0, s2 = 0.0;
    for (int c = 0; c < cols; ++c) {
        const double d = (double)xr[c] - k;
        s1 += d;
        s2 += d * d;
    }
    const double mean_shift = s1 / cols;
    const double var = fmax(s2 / cols - mean_shift * mean_shift, 0.0);
    const double mean = k + mean_shift;
    const double rstd = 1.0 / sqrt(var + (double)eps);
    for (int c = 0; c < cols; ++c) {
        outr[c] = (float)(((double)xr[c] - mean) * rstd * (double)weight[c] + (double)bias[c]);
    }
}
