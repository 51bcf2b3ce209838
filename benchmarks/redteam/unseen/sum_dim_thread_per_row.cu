/* mutagym
[[launch]]
kernel = "row_sums"
grid = ["ceil_div(rows, 128)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, a plain loop over the row: no shared memory and no barriers, and with many
// rows every thread has work.
extern "C" __global__ void row_sums(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += xr[c];
    out[r] = s;
}
