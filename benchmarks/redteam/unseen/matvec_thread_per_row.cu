/* mutagym
[[launch]]
kernel = "gemv_rows"
grid = ["ceil_div(m, 64)"]
block = [64]
args = ["a", "x", "out", "m", "k"]
*/
// One thread per output row: the dot product of row i of a with x, unrolled by four.
extern "C" __global__ void gemv_rows(const float* __restrict__ a, const float* __restrict__ x,
                                     float* __restrict__ out, int m, int k) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    const float* ar = a + (size_t)i * k;
    float acc = 0.0f;
    int p = 0;
    for (; p + 4 <= k; p += 4) {
        acc = fmaf(ar[p], x[p], acc);
        acc = fmaf(ar[p + 1], x[p + 1], acc);
        acc = fmaf(ar[p + 2], x[p + 2], acc);
        acc = fmaf(ar[p + 3], x[p + 3], acc);
    }
    for (; p < k; ++p) acc = fmaf(ar[p], x[p], acc);
    out[i] = acc;
}
