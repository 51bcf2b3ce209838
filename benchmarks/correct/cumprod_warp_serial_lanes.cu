/* mutagym
[[launch]]
kernel = "cumprod_warp_serial"
grid = ["ceil_div(rows, 32)"]
block = [32]
args = ["x", "out", "rows", "cols"]
*/
// One warp per 32 rows, one lane per row, a float32 running product left to right: the warp reads
// column c of 32 consecutive rows together (a column-major walk of a row-major block). Each
// prefix is one more rounding than the last, about cols * 6e-8 relative at the end of a
// 1024-long row.
extern "C" __global__ void cumprod_warp_serial(const float* __restrict__ x, float* __restrict__ out, int rows,
                                               int cols) {
    const int row = blockIdx.x * 32 + threadIdx.x;
    if (row >= rows) return;
    const size_t base = (size_t)row * cols;
    float p = 1.0f;
    for (int c = 0; c < cols; ++c) {
        p *= x[base + c];
        out[base + c] = p;
    }
}
