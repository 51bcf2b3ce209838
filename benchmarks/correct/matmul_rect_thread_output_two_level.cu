/* mutagym
[[launch]]
kernel = "matmul_rect_two_level"
grid = ["ceil_div(n, 32)", "ceil_div(m, 4)"]
block = [32, 4]
args = ["a", "b", "out", "m", "k", "n"]
*/
// One thread per output, no shared memory, two-level summation in float32: the products of each
// 128-long run of k are summed into a fresh register (fused multiply-adds), and each run's sum
// is added to the output's total; a long k therefore has k / 128 roundings at the total's
// magnitude instead of k.
#define RUN 128

extern "C" __global__ void matmul_rect_two_level(const float* __restrict__ a, const float* __restrict__ b,
                                                 float* __restrict__ out, int m, int k, int n) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    const float* ar = a + (size_t)row * k;
    float total = 0.0f;
    for (int p0 = 0; p0 < k; p0 += RUN) {
        const int p1 = min(k, p0 + RUN);
        float run = 0.0f;
        for (int p = p0; p < p1; ++p) run = fmaf(ar[p], b[(size_t)p * n + col], run);
        total += run;
    }
    out[(size_t)row * n + col] = total;
}
