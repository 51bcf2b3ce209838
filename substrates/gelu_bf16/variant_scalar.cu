/* mutagym
[[launch]]
kernel = "gelu_bf16_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// GELU (erf form) on bfloat16, variant: one element per loop trip with 128-thread blocks, and
// 1 + erf(z) computed as erfc(-z), which keeps relative accuracy in the negative tail.
#include <cuda_bf16.h>

extern "C" __global__ void gelu_bf16_scalar(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float v = __bfloat162float(x[i]);
        out[i] = __float2bfloat16_rn(0.5f * v * erfcf(-v * 0.70710678118654752f));
    }
}
