/* mutagym
[[launch]]
kernel = "sigmoid_via_tanh"
grid = ["ceil_div(n, 128)"]
block = [128]
args = ["x", "out", "n"]
*/
// sigmoid(x) = (1 + tanh(x / 2)) / 2: tanh saturates instead of overflowing.
extern "C" __global__ void sigmoid_via_tanh(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.5f * tanhf(0.5f * x[i]) + 0.5f;
}
