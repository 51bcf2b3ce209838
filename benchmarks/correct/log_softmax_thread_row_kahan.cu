/* mutagym
[[launch]]
kernel = "log_softmax_rows_kahan"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, float32 throughout: the row maximum m, a Kahan-compensated sum s of
// expf(x - m) left to right, then out = (x - m) - logf(s). Subtracting m first keeps x - m
// exact where x is close to m, and log(s) is in [0, log(cols)].
extern "C" __global__ void log_softmax_rows_kahan(const float* __restrict__ x, float* __restrict__ out,
                                                  int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float s = 0.0f, comp = 0.0f;
    for (int c = 0; c < cols; ++c) {
        const float y = expf(xr[c] - m) - comp;
        const float t = s + y;
        comp = (t - s) - y;
        s = t;
    }
    const float log_s = logf(s);
    for (int c = 0; c < cols; ++c) outr[c] = (xr[c] - m) - log_s;
}
