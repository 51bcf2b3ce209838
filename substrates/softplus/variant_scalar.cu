/* mutagym
[[launch]]
kernel = "softplus_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n", "beta", "threshold"]
*/
// Softplus, variant: one float per loop trip with 128-thread blocks, and the overflow-free form max(bx, 0) + log1p(exp(-|bx|)).
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float softplus_alt(float v, float beta, float threshold) {
    const float bx = v * beta;
    return bx > threshold ? v : (fmaxf(bx, 0.0f) + log1pf(expf(-fabsf(bx)))) / beta;
}

extern "C" __global__ void softplus_scalar(const float* __restrict__ x, float* __restrict__ out, int n, float beta, float threshold) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = softplus_alt(x[i], beta, threshold);
    }
}
