/* mutagym
[[launch]]
kernel = "gelu_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// GELU (erf form), variant: one float per loop trip with 128-thread blocks, and 1 + erf(z) = erfc(-z), which keeps relative accuracy in the negative tail.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float gelu_alt(float v) {
    return 0.5f * v * erfcf(-v * 0.70710678118654752f);
}

extern "C" __global__ void gelu_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = gelu_alt(x[i]);
    }
}
