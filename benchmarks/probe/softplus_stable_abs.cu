/* mutagym
[[launch]]
kernel = "softplus_abs"
grid = ["min(ceil_div(n, 256), 1024)"]
block = [256]
args = ["x", "out", "n", "beta", "threshold"]
*/
// softplus(z) = max(z, 0) + log1p(exp(-|z|)): exp's argument is never positive.
extern "C" __global__ void softplus_abs(const float* x, float* out, int n, float beta, float threshold) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float z = beta * x[i];
        out[i] = z > threshold ? x[i] : (fmaxf(z, 0.0f) + log1pf(expf(-fabsf(z)))) / beta;
    }
}
