/* mutagym
[[launch]]
kernel = "relu_each"
grid = ["ceil_div(n, 512)"]
block = [512]
args = ["x", "out", "n"]
*/
// The simplest correct ReLU: as many blocks of 512 threads as n needs, one element each.
extern "C" __global__ void relu_each(const float* x, float* out, int n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
