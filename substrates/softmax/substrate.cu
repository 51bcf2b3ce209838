/* mutagym
[[launch]]
kernel = "softmax_rows"
grid = ["rows"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 128-thread block per row, three passes over the row:
//   1. row maximum m (strided per-thread max from -INFINITY, xor-shuffle in each warp, the warp
//      results through shared memory, a second xor-shuffle so every thread holds m);
//   2. s = sum of expf(x - m), reduced the same way;
//   3. out = expf(x - m) / s.
#include <math.h>
#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_max(float v) {
    for (int mask = 16; mask > 0; mask >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
    }
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int mask = 16; mask > 0; mask >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, mask);
    }
    return v;
}

// Every thread gets the block-wide maximum. `red` holds one value per warp; the trailing barrier
// lets the caller reuse it.
__device__ float block_max(float v, float* red) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) {
        red[warp] = v;
    }
    __syncthreads();
    v = lane < WARPS ? red[lane] : -INFINITY;
    v = warp_max(v);
    __syncthreads();
    return v;
}

__device__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) {
        red[warp] = v;
    }
    __syncthreads();
    v = lane < WARPS ? red[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out,
                                        int rows, int cols) {
    __shared__ float red[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = tid; c < cols; c += BLOCK) {
        m = fmaxf(m, xr[c]);
    }
    m = block_max(m, red);

    float s = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        s += expf(xr[c] - m);
    }
    s = block_sum(s, red);

    for (int c = tid; c < cols; c += BLOCK) {
        outr[c] = expf(xr[c] - m) / s;
    }
}
