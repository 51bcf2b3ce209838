/* mutagym
[[launch]]
kernel = "scan_tiles"
grid = ["rows"]
block = [1024]
args = ["x", "out", "rows", "cols"]
*/
// Block per row; the row is scanned tile by tile (1024 columns) with a Hillis-Steele scan in
// shared memory.
extern "C" __global__ void scan_tiles(const float* x, float* out, int rows, int cols) {
    __shared__ float buf[2][1024];
    const int t = threadIdx.x;
    for (int base = 0; base < cols; base += 1024) {
        int c = base + t;
        int cur = 0;
        buf[cur][t] = c < cols ? x[(size_t)blockIdx.x * cols + c] : 0.0f;
        __syncthreads();
        for (int off = 1; off < 1024; off <<= 1) {
            buf[cur ^ 1][t] = buf[cur][t] + (t >= off ? buf[cur][t - off] : 0.0f);
            cur ^= 1;
            __syncthreads();
        }
        if (c < cols) out[(size_t)blockIdx.x * cols + c] = buf[cur][t];
        __syncthreads();
    }
}
