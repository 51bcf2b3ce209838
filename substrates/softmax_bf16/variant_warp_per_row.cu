/* mutagym
[[launch]]
kernel = "softmax_bf16_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// bfloat16 in and out. One warp per row, four rows per block, no shared memory: lanes take
// stride-32 slices, the row maximum and the sum of exponentials are xor-shuffle reductions, and
// the sum is kept in double.
#include <cuda_bf16.h>
#include <math.h>
#define ROWS_PER_BLOCK 4

extern "C" __global__ void softmax_bf16_warp(const __nv_bfloat16* __restrict__ x,
                                             __nv_bfloat16* __restrict__ out, int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const __nv_bfloat16* xr = x + (size_t)row * cols;
    __nv_bfloat16* outr = out + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) {
        m = fmaxf(m, __bfloat162float(xr[c]));
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    }

    double s = 0.0;
    for (int c = lane; c < cols; c += 32) {
        s += (double)expf(__bfloat162float(xr[c]) - m);
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, mask);
    }
    const float inv = (float)(1.0 / s);
    for (int c = lane; c < cols; c += 32) {
        outr[c] = __float2bfloat16(expf(__bfloat162float(xr[c]) - m) * inv);
    }
}
