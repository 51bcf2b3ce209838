/* mutagym
[[launch]]
kernel = "argmin_warp_rows"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row. Values are compared as order-preserving unsigned keys (cheaper than float
// compares with an index tie-break: one 64-bit min of (key, column) does both).
#include <stdint.h>

__device__ __forceinline__ unsigned long long pack(float v, int c) {
    const unsigned int u = __float_as_uint(v);
    const unsigned int key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)key << 32) | (unsigned int)c;
}

extern "C" __global__ void argmin_warp_rows(const float* __restrict__ x, int64_t* __restrict__ out,
                                            int rows, int cols) {
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    unsigned long long best = ~0ull;
    for (int c = lane; c < cols; c += 32) {
        const unsigned long long k = pack(xr[c], c);
        best = k < best ? k : best;
    }
    for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, best, off);
        best = o < best ? o : best;
    }
    if (lane == 0) out[row] = (int64_t)(unsigned int)(best & 0xffffffffull);
}
