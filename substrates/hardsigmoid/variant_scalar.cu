/* mutagym
[[launch]]
kernel = "hardsigmoid_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// Hardsigmoid, variant: one float per loop trip with 128-thread blocks, and piecewise form x / 6 + 1/2 between the two saturation points.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float hardsigmoid_alt(float v) {
    return v <= -3.0f ? 0.0f : (v >= 3.0f ? 1.0f : v * (1.0f / 6.0f) + 0.5f);
}

extern "C" __global__ void hardsigmoid_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = hardsigmoid_alt(x[i]);
    }
}
