/* mutagym
[[launch]]
kernel = "cosine_rows_f64"
grid = ["ceil_div(batch, 64)"]
block = [64]
args = ["a", "b", "out", "batch", "dim", "eps"]
fill = {out = 0}
*/
// One thread per row, the three dot products a.b, a.a and b.b left to right in double,
// cos = ab / (max(|a|, eps) * max(|b|, eps)) in double, and the row's (1 - cos) / batch added to
// out[0] with a float atomicAdd (out starts at 0; rows land in any order).
extern "C" __global__ void cosine_rows_f64(const float* __restrict__ a, const float* __restrict__ b, float* out,
                                           int batch, int dim, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch) return;
    const size_t base = (size_t)row * dim;
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int j = 0; j < dim; ++j) {
        const double x = a[base + j], y = b[base + j];
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    const double cosine = ab / (fmax(sqrt(aa), (double)eps) * fmax(sqrt(bb), (double)eps));
    atomicAdd(out, (float)((1.0 - cosine) / (double)batch));
}
