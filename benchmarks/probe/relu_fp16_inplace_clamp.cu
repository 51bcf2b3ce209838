/* mutagym
[[launch]]
kernel = "relu_h_stage"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]
*/
#include <cuda_fp16.h>
// Copy the element to the output, then clamp it in place: each thread reads and writes only its
// own __half element.
extern "C" __global__ void relu_h_stage(const __half* x, __half* out, int n) {
    int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;
    out[i] = x[i];
    __half v = out[i];
    out[i] = __hgt(v, __float2half(0.0f)) ? v : __float2half(0.0f);
}
