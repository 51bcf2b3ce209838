/* mutagym
[[launch]]
kernel = "matmul_f64_direct"
grid = ["ceil_div(n, 32)", "ceil_div(n, 8)"]
block = [32, 8]
args = ["a", "b", "out", "n"]
*/
// No shared memory: one thread per output reads its row of a and column of b straight from global
// memory (neighbouring threads of a warp read neighbouring columns of b) and accumulates the
// products in double, rounding to float once.
extern "C" __global__ void matmul_f64_direct(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ out, int n) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    const float* ar = a + (size_t)row * n;
    double acc = 0.0;
    for (int k = 0; k < n; ++k) acc += (double)ar[k] * (double)b[(size_t)k * n + col];
    out[(size_t)row * n + col] = (float)acc;
}
