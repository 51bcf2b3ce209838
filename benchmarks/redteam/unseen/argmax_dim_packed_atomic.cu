/* mutagym
[[launch]]
kernel = "argmax_keys"
grid = ["ceil_div(cols, 1024)", "rows"]
block = [256]
args = ["x", "best", "cols"]
fill = {best = 0}

[[launch]]
kernel = "argmax_unpack"
grid = ["ceil_div(rows, 256)"]
block = [256]
args = ["best", "out", "rows"]

[[scratch]]
name = "best"
dtype = "uint64"
size = "rows"
*/
// Argmax as one 64-bit atomicMax per row: the high word is the value mapped to an unsigned key
// that orders like the float, the low word is ~column, so among equal keys the lowest column wins.
// Blocks of 1024 columns (four per thread) reduce in registers and a warp before the atomic.
#include <stdint.h>

__device__ __forceinline__ unsigned int order_key(float v) {
    const unsigned int u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

extern "C" __global__ void argmax_keys(const float* __restrict__ x, unsigned long long* __restrict__ best,
                                       int cols) {
    const float* xr = x + (size_t)blockIdx.y * cols;
    unsigned long long key = 0ull;
    for (int k = 0; k < 4; ++k) {
        const int c = blockIdx.x * 1024 + k * 256 + threadIdx.x;
        if (c < cols) {
            const unsigned long long cand =
                ((unsigned long long)order_key(xr[c]) << 32) | (unsigned int)(~(unsigned int)c);
            key = cand > key ? cand : key;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, off);
        key = other > key ? other : key;
    }
    if ((threadIdx.x & 31) == 0) atomicMax(&best[blockIdx.y], key);
}

extern "C" __global__ void argmax_unpack(const unsigned long long* __restrict__ best,
                                         int64_t* __restrict__ out, int rows) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) out[r] = (int64_t)(~(unsigned int)(best[r] & 0xffffffffull));
}
