/* mutagym
[[launch]]
kernel = "min_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row: strided running minimum from +INFINITY, shuffle-down minimum in each warp,
// the eight warp minima through shared memory, and a last shuffle in warp 0.
#include <math.h>
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_reduce_min(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = fminf(v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    return v;
}

extern "C" __global__ void min_rows(const float* __restrict__ x, float* __restrict__ out, int rows,
                                    int cols) {
    __shared__ float warp_min[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;

    float m = INFINITY;
    for (int c = tid; c < cols; c += BLOCK) {
        m = fminf(m, xr[c]);
    }
    m = warp_reduce_min(m);
    if (lane == 0) {
        warp_min[warp] = m;
    }
    __syncthreads();
    if (warp == 0) {
        float v = lane < WARPS ? warp_min[lane] : INFINITY;
        v = warp_reduce_min(v);
        if (lane == 0 && row < rows) {
            out[row] = v;
        }
    }
}
