/* mutagym
[[launch]]
kernel = "relu_avg"
grid = ["min(ceil_div(n, 256), 2048)"]
block = [256]
args = ["x", "out", "n"]
*/
// relu(x) = (x + |x|) / 2: one add and one abs, no compare; grid-stride loop.
extern "C" __global__ void relu_avg(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float v = x[i];
        out[i] = 0.5f * (v + fabsf(v));
    }
}
