/* mutagym
[[launch]]
kernel = "gelu_bf16_pair"
grid = ["min(ceil_div(n, 512), 1024)"]
block = [256]
args = ["x", "out", "n"]
*/
// GELU (erf form) on bfloat16: out[i] = 0.5 * x * (1 + erf(x / sqrt(2))), computed in float32 and
// rounded to bfloat16 once. Pairs move as __nv_bfloat162 (buffers start 16-byte aligned, so every
// pair is 4-byte aligned) in a grid-stride loop; an odd n leaves one element for the scalar tail.
#include <cuda_bf16.h>

__device__ __forceinline__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

extern "C" __global__ void gelu_bf16_pair(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out, int n) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    const int n2 = n >> 1;
    const __nv_bfloat162* __restrict__ x2 = reinterpret_cast<const __nv_bfloat162*>(x);
    __nv_bfloat162* __restrict__ out2 = reinterpret_cast<__nv_bfloat162*>(out);
    for (int i = tid; i < n2; i += stride) {
        const float2 v = __bfloat1622float2(x2[i]);
        out2[i] = __floats2bfloat162_rn(gelu_erf(v.x), gelu_erf(v.y));
    }
    for (int i = (n2 << 1) + tid; i < n; i += stride) {
        out[i] = __float2bfloat16_rn(gelu_erf(__bfloat162float(x[i])));
    }
}
