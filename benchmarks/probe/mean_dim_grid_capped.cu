/* mutagym
[[launch]]
kernel = "mean_rows_y"
grid = [1, "min(rows, 65535)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// Rows on the grid's y axis (at most 65535 blocks there), 128 threads per row.
extern "C" __global__ void mean_rows_y(const float* x, float* out, int rows, int cols) {
    __shared__ float s[128];
    const int r = blockIdx.y;
    float a = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 128) a += x[(size_t)r * cols + c];
    s[threadIdx.x] = a;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = s[0] / cols;
}
