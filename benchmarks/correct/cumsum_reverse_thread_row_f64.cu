/* mutagym
[[launch]]
kernel = "cumsum_reverse_f64"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, walking from the last column to the first with a double running sum; each
// suffix sum is rounded to float once.
extern "C" __global__ void cumsum_reverse_f64(const float* __restrict__ x, float* __restrict__ out, int rows,
                                              int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const size_t base = (size_t)row * cols;
    double s = 0.0;
    for (int c = cols - 1; c >= 0; --c) {
        s += (double)x[base + c];
        out[base + c] = (float)s;
    }
}
