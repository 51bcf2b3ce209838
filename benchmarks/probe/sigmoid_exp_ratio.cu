/* mutagym
[[launch]]
kernel = "sigmoid_ratio"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]
*/
// sigmoid(x) = e^x / (1 + e^x): one exp per element.
extern "C" __global__ void sigmoid_ratio(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float e = expf(x[i]);
        out[i] = e / (1.0f + e);
    }
}
