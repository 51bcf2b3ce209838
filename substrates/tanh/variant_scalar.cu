/* mutagym
[[launch]]
kernel = "tanh_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// Tanh, variant: one float per loop trip with 128-thread blocks, and tanh(v) = 1 - 2 / (exp(2v) + 1), saturating correctly when expf overflows.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float tanh_alt(float v) {
    const float e = expf(2.0f * v);
    return 1.0f - 2.0f / (e + 1.0f);
}

extern "C" __global__ void tanh_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = tanh_alt(x[i]);
    }
}
