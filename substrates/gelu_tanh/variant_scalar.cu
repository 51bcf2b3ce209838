/* mutagym
[[launch]]
kernel = "gelu_tanh_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// GELU (tanh approximation), variant: one float per loop trip with 128-thread blocks, and 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), so the tanh becomes one expf.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float gelu_tanh_alt(float v) {
    const float inner = 0.79788456080286536f * v * (1.0f + 0.044715f * v * v);
    return v / (1.0f + expf(-2.0f * inner));
}

extern "C" __global__ void gelu_tanh_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = gelu_tanh_alt(x[i]);
    }
}
