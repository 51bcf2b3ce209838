/* mutagym
[[launch]]
kernel = "kl_rows_f64"
grid = ["ceil_div(batch, 32)"]
block = [32]
args = ["predictions", "targets", "out", "batch", "classes"]
fill = {out = 0}
*/
// One thread per row, in double: the row's sum of t * (log t - log p) (a term with t == 0 is 0,
// one with t > 0 and p == 0 is +inf, as torch's xlogy gives), then the row's share sum / batch
// goes into out[0] with a float atomicAdd (out starts at 0; rows land in any order).
extern "C" __global__ void kl_rows_f64(const float* __restrict__ predictions, const float* __restrict__ targets,
                                       float* out, int batch, int classes) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch) return;
    const size_t base = (size_t)row * classes;
    double s = 0.0;
    for (int c = 0; c < classes; ++c) {
        const double t = targets[base + c];
        if (t > 0.0) s += t * (log(t) - log((double)predictions[base + c]));
    }
    atomicAdd(out, (float)(s / (double)batch));
}
