/* mutagym
[[launch]]
kernel = "l1_rows"
grid = ["ceil_div(rows, 32)"]
block = [32]
args = ["x", "out", "rows", "cols", "eps"]
*/
// One thread per row: the L1 norm in one loop, then the row scaled by its reciprocal.
extern "C" __global__ void l1_rows(const float* __restrict__ x, float* __restrict__ out, int rows, int cols,
                                   float eps) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    float* orow = out + (size_t)r * cols;
    float norm = 0.0f;
    for (int c = 0; c < cols; ++c) norm += fabsf(xr[c]);
    const float inv = 1.0f / fmaxf(norm, eps);
    for (int c = 0; c < cols; ++c) orow[c] = xr[c] * inv;
}
