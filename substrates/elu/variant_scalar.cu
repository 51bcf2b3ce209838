/* mutagym
[[launch]]
kernel = "elu_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n", "alpha"]
*/
// ELU, variant: one float per loop trip with 128-thread blocks, and expf(v) - 1 instead of expm1f (less accurate near 0, well inside tolerance).
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float elu_alt(float v, float alpha) {
    return v > 0.0f ? v : alpha * (expf(v) - 1.0f);
}

extern "C" __global__ void elu_scalar(const float* __restrict__ x, float* __restrict__ out, int n, float alpha) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = elu_alt(x[i], alpha);
    }
}
