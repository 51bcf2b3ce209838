/* mutagym
[[launch]]
kernel = "softplus_direct"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n", "beta", "threshold"]
*/
// Softplus straight from the formula.
extern "C" __global__ void softplus_direct(const float* x, float* out, int n, float beta, float threshold) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = logf(1.0f + expf(beta * x[i])) / beta;
}
