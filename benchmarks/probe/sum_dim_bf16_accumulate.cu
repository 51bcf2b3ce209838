/* mutagym
[[launch]]
kernel = "sum_bf16"
grid = ["rows"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
#include <cuda_bf16.h>
// Per-thread partial sums in bfloat16 (half the register traffic), the block tree in float.
extern "C" __global__ void sum_bf16(const float* x, float* out, int rows, int cols) {
    __shared__ float part[64];
    __nv_bfloat16 acc = __float2bfloat16(0.0f);
    for (int c = threadIdx.x; c < cols; c += 64)
        acc = __hadd(acc, __float2bfloat16(x[(size_t)blockIdx.x * cols + c]));
    part[threadIdx.x] = __bfloat162float(acc);
    __syncthreads();
    for (int h = 32; h > 0; h >>= 1) {
        if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
