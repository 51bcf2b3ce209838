/* mutagym
[[launch]]
kernel = "cumsum_exclusive_kahan"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, a Kahan-compensated running sum in float32: out[c] is the compensated total
// of x[0 .. c - 1] (sum + the pending correction) written before x[c] is added.
extern "C" __global__ void cumsum_exclusive_kahan(const float* __restrict__ x, float* __restrict__ out, int rows,
                                                  int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const size_t base = (size_t)row * cols;
    float s = 0.0f, comp = 0.0f;
    for (int c = 0; c < cols; ++c) {
        out[base + c] = s - comp;
        const float y = x[base + c] - comp;
        const float t = s + y;
        comp = (t - s) - y;
        s = t;
    }
}
