/* mutagym
[[launch]]
kernel = "selu_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// SELU, variant: one float per loop trip with 128-thread blocks, and scale * max(v, 0) + scale * alpha * min(exp(v) - 1, 0).
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float selu_alt(float v) {
    const float alpha = 1.6732632423543772848f;
    const float scale = 1.0507009873554804934f;
    return scale * fmaxf(v, 0.0f) + scale * alpha * fminf(expf(v) - 1.0f, 0.0f);
}

extern "C" __global__ void selu_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = selu_alt(x[i]);
    }
}
