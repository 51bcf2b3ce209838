/* mutagym
[[launch]]
kernel = "softplus_stable"
grid = ["min(ceil_div(n, 256), 1024)"]
block = [256]
args = ["x", "out", "n", "beta", "threshold"]
*/
// "Stable" softplus: max(z, 0) + log1p(exp(-z)), so exp never sees a large argument.
extern "C" __global__ void softplus_stable(const float* x, float* out, int n, float beta, float threshold) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float z = beta * x[i];
        out[i] = z > threshold ? x[i] : (fmaxf(z, 0.0f) + log1pf(expf(-z))) / beta;
    }
}
