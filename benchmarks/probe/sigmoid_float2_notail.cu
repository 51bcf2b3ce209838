/* mutagym
[[launch]]
kernel = "sigmoid_pairs"
grid = ["min(ceil_div(n, 512), 1024)"]
block = [256]
args = ["x", "out", "n"]
*/
// Two elements per load (float2); the grid-stride loop covers every pair.
__device__ float sig(float v) { return 1.0f / (1.0f + expf(-v)); }
extern "C" __global__ void sigmoid_pairs(const float* x, float* out, int n) {
    const float2* in2 = reinterpret_cast<const float2*>(x);
    float2* out2 = reinterpret_cast<float2*>(out);
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < n / 2; p += gridDim.x * blockDim.x) {
        float2 v = in2[p];
        out2[p] = make_float2(sig(v.x), sig(v.y));
    }
}
