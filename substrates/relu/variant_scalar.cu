/* mutagym
[[launch]]
kernel = "relu_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// ReLU, variant: one float per loop trip with 128-thread blocks, and a compare-and-select instead of fmaxf.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float relu_alt(float v) {
    return v < 0.0f ? 0.0f : v;
}

extern "C" __global__ void relu_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = relu_alt(x[i]);
    }
}
