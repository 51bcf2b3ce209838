/* mutagym
[[launch]]
kernel = "relu_fp16_half2"
grid = ["min(ceil_div(n, 512), 1024)"]
block = [256]
args = ["x", "out", "n"]
*/
// ReLU on float16: out[i] = max(x[i], 0).
// Pairs of halves move as __half2 (buffers start 16-byte aligned, so every pair is 4-byte aligned)
// in a grid-stride loop; an odd n leaves one element for the scalar tail loop.
#include <cuda_fp16.h>

extern "C" __global__ void relu_fp16_half2(const __half* __restrict__ x, __half* __restrict__ out, int n) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    const int n2 = n >> 1;
    const __half2* __restrict__ x2 = reinterpret_cast<const __half2*>(x);
    __half2* __restrict__ out2 = reinterpret_cast<__half2*>(out);
    for (int i = tid; i < n2; i += stride) {
        const float2 v = __half22float2(x2[i]);
        out2[i] = __floats2half2_rn(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f));
    }
    for (int i = (n2 << 1) + tid; i < n; i += stride) {
        out[i] = __float2half_rn(fmaxf(__half2float(x[i]), 0.0f));
    }
}
