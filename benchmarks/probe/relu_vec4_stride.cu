/* mutagym
[[launch]]
kernel = "relu_vec"
grid = ["min(ceil_div(n, 512), 2048)"]
block = [128]
args = ["x", "out", "n"]
*/
// Vectorised: full float4 groups in a grid-stride loop, then the n % 4 tail, also grid-strided.
#define RELU(v) ((v) > 0.0f ? (v) : 0.0f)
extern "C" __global__ void relu_vec(const float* x, float* out, int n) {
    const int stride = gridDim.x * blockDim.x;
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    const int full = n >> 2;
    for (int g = first; g < full; g += stride) {
        float4 v = reinterpret_cast<const float4*>(x)[g];
        v.x = RELU(v.x); v.y = RELU(v.y); v.z = RELU(v.z); v.w = RELU(v.w);
        reinterpret_cast<float4*>(out)[g] = v;
    }
    for (int i = 4 * full + first; i < n; i += stride) out[i] = RELU(x[i]);
}
