/* mutagym
[[launch]]
kernel = "matvec_rows_neumaier"
grid = ["ceil_div(m, 64)"]
block = [64]
args = ["a", "x", "out", "m", "k"]
*/
// One thread per row, a Neumaier-compensated float32 dot product left to right (each product
// rounded to float, then added with its rounding error tracked), no shared memory.
extern "C" __global__ void matvec_rows_neumaier(const float* __restrict__ a, const float* __restrict__ x,
                                                float* __restrict__ out, int m, int k) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    const float* ar = a + (size_t)row * k;
    float s = 0.0f, c = 0.0f;
    for (int p = 0; p < k; ++p) {
        const float v = __fmul_rn(ar[p], x[p]);   // no fused multiply-add: the term is what is compensated
        const float t = s + v;
        c += (fabsf(s) >= fabsf(v)) ? (s - t) + v : (v - t) + s;
        s = t;
    }
    out[row] = s + c;
}
