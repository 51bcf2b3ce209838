/* mutagym
[[launch]]
kernel = "softsign_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// Softsign, variant: one float per loop trip with 128-thread blocks, and sign(v) * (1 - 1 / (1 + |v|)).
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float softsign_alt(float v) {
    const float a = fabsf(v);
    return copysignf(1.0f - 1.0f / (1.0f + a), v);
}

extern "C" __global__ void softsign_scalar(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = softsign_alt(x[i]);
    }
}
