/* mutagym
[[launch]]
kernel = "relu_fp16_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n"]
*/
// ReLU on float16, variant: one half per loop trip with 128-thread blocks; positive inputs are
// copied through as halves instead of being converted to float and back.
#include <cuda_fp16.h>

extern "C" __global__ void relu_fp16_scalar(const __half* __restrict__ x, __half* __restrict__ out, int n) {
    const __half zero = __float2half_rn(0.0f);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const __half v = x[i];
        out[i] = __half2float(v) > 0.0f ? v : zero;
    }
}
