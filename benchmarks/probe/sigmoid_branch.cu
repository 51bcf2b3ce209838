/* mutagym
[[launch]]
kernel = "sigmoid_signed"
grid = ["min(ceil_div(n, 1024), 256)"]
block = [1024]
args = ["x", "out", "n"]
*/
// Branch on the sign so that exp only ever sees a non-positive argument.
extern "C" __global__ void sigmoid_signed(const float* x, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        if (v >= 0.0f) {
            out[i] = 1.0f / (1.0f + expf(-v));
        } else {
            float e = expf(v);
            out[i] = e / (1.0f + e);
        }
    }
}
