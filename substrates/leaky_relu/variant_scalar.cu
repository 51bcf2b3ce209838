/* mutagym
[[launch]]
kernel = "leaky_relu_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n", "negative_slope"]
*/
// Leaky ReLU, variant: one float per loop trip with 128-thread blocks, and max/min split: max(v, 0) + slope * min(v, 0).
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float leaky_relu_alt(float v, float negative_slope) {
    return fmaxf(v, 0.0f) + negative_slope * fminf(v, 0.0f);
}

extern "C" __global__ void leaky_relu_scalar(const float* __restrict__ x, float* __restrict__ out, int n, float negative_slope) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = leaky_relu_alt(x[i], negative_slope);
    }
}
