/* mutagym
[[launch]]
kernel = "gelu_fast_erf"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]
*/
// Exact-form GELU with erf from Winitzki's closed form (relative error about 1e-4, one exp and no
// erff): erf(z) = sign(z) sqrt(1 - exp(-z^2 (4/pi + a z^2) / (1 + a z^2))), a = 0.147.
__device__ __forceinline__ float erf_winitzki(float z) {
    const float a = 0.147f;
    const float z2 = z * z;
    const float e = expf(-z2 * (1.2732395f + a * z2) / (1.0f + a * z2));
    return copysignf(sqrtf(1.0f - e), z);
}

extern "C" __global__ void gelu_fast_erf(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        out[i] = 0.5f * v * (1.0f + erf_winitzki(v * 0.70710678f));
    }
}
