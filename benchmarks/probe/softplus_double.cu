/* mutagym
[[launch]]
kernel = "softplus_f64"
grid = ["min(ceil_div(n, 64), 4096)"]
block = [64]
args = ["x", "out", "n", "beta", "threshold"]
*/
// Evaluate in double precision (exp(89) is finite there), then round once to float.
extern "C" __global__ void softplus_f64(const float* x, float* out, int n, float beta, float threshold) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        double z = (double)beta * (double)x[i];
        out[i] = z > (double)threshold ? x[i] : (float)(log1p(exp(z)) / (double)beta);
    }
}
