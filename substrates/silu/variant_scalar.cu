/* mutagym
[[launch]]
kernel = "silu_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// SiLU (swish), variant: one float per loop trip with 128-thread blocks, and v * sigmoid(v) with sigmoid(v) = 0.5 * tanh(v / 2) + 0.5.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float silu_alt(float v) {
    return v * (0.5f * tanhf(0.5f * v) + 0.5f);
}

extern "C" __global__ void silu_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = silu_alt(x[i]);
    }
}
