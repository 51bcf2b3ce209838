/* mutagym
[[launch]]
kernel = "triplet_rows_f64"
grid = ["ceil_div(batch, 64)"]
block = [64]
args = ["anchor", "positive", "negative", "row_loss", "batch", "dim", "margin", "eps"]

[[launch]]
kernel = "triplet_mean_f64"
grid = [1]
block = [32]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float64"
size = "batch"
*/
// One thread per row in double: both squared distances sum (a - p + eps)^2 and (a - n + eps)^2
// left to right, loss = max(sqrt(d_ap) - sqrt(d_an) + margin, 0) in double into scratch; one
// warp averages the row losses in double (strided, then a shuffle-down tree).
extern "C" __global__ void triplet_rows_f64(const float* __restrict__ anchor, const float* __restrict__ positive,
                                            const float* __restrict__ negative, double* __restrict__ row_loss,
                                            int batch, int dim, float margin, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch) return;
    const size_t base = (size_t)row * dim;
    double sp = 0.0, sn = 0.0;
    for (int j = 0; j < dim; ++j) {
        const double x = anchor[base + j];
        const double dp = x - (double)positive[base + j] + (double)eps;
        const double dn = x - (double)negative[base + j] + (double)eps;
        sp += dp * dp;
        sn += dn * dn;
    }
    row_loss[row] = fmax(sqrt(sp) - sqrt(sn) + (double)margin, 0.0);
}

extern "C" __global__ void triplet_mean_f64(const double* __restrict__ row_loss, float* __restrict__ out, int batch) {
    double s = 0.0;
    for (int i = threadIdx.x; i < batch; i += 32) s += row_loss[i];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) out[0] = (float)(s / (double)batch);
}
