/* mutagym
[[launch]]
kernel = "gemm_sigmoid_atomic"
grid = ["ceil_div(out_features, 32)", "ceil_div(batch, 4)"]
block = [32, 4]
args = ["x", "weight", "bias", "out", "batch", "in_features", "out_features"]
fill = {out = 0}
*/
// One thread per (row i, feature j), no shared memory: the dot product x[i, :] . weight[j, :] in
// double, v = dot + bias[j], sigmoid(v) = 1 / (1 + exp(-v)) in double, then added to out[i] with
// a float atomicAdd (out starts at 0; the features of a row land in any order). Every term is in
// (0, 1), so the float sum's rounding stays relative to the row's total.
extern "C" __global__ void gemm_sigmoid_atomic(const float* __restrict__ x, const float* __restrict__ weight,
                                               const float* __restrict__ bias, float* out, int batch,
                                               int in_features, int out_features) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= batch || j >= out_features) return;
    const float* xr = x + (size_t)i * in_features;
    const float* wr = weight + (size_t)j * in_features;
    double dot = 0.0;
    for (int p = 0; p < in_features; ++p) dot += (double)xr[p] * (double)wr[p];
    const double v = dot + (double)bias[j];
    atomicAdd(out + i, (float)(1.0 / (1.0 + exp(-v))));
}
