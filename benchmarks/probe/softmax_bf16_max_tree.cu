/* mutagym
[[launch]]
kernel = "softmax_bf16_rows"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
#include <cuda_bf16.h>
// Block per row. The row max stays in bfloat16 (a max is exact in any type): a bf16 tree in
// shared memory. The sum of exp is a float tree; the output is rounded to bfloat16 once.
extern "C" __global__ void softmax_bf16_rows(const __nv_bfloat16* x, __nv_bfloat16* out, int rows, int cols) {
    __shared__ __nv_bfloat16 mx[256];
    __shared__ float sm[256];
    const int t = threadIdx.x;
    const __nv_bfloat16* in = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = t; c < cols; c += 256) m = fmaxf(m, __bfloat162float(in[c]));
    mx[t] = __float2bfloat16(m);
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) mx[t] = __hmax(mx[t], mx[t + h]);
        __syncthreads();
    }
    const float rowmax = __bfloat162float(mx[0]);
    float s = 0.0f;
    for (int c = t; c < cols; c += 256) s += expf(__bfloat162float(in[c]) - rowmax);
    sm[t] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) sm[t] += sm[t + h];
        __syncthreads();
    }
    const float inv = 1.0f / sm[0];
    for (int c = t; c < cols; c += 256)
        out[(size_t)blockIdx.x * cols + c] = __float2bfloat16(expf(__bfloat162float(in[c]) - rowmax) * inv);
}
