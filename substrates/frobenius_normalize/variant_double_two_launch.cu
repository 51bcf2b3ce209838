/* mutagym
[[launch]]
kernel = "frob_partial_sums_f64"
grid = ["min(ceil_div(rows * cols, 8192), 32)"]
block = [128]
shared_bytes = 0
args = ["x", "partial", "rows", "cols"]

[[launch]]
kernel = "frob_scale_f64"
grid = ["min(ceil_div(rows * cols, 2048), 512)"]
block = [128]
shared_bytes = 0
args = ["x", "partial", "out", "rows", "cols"]

[[scratch]]
name = "partial"
dtype = "float64"
size = "32"
*/
// Two launches, sums in double:
//   1. each block sums x^2 over a grid-stride slice in double (scalar loads), shuffle-down in each
//      warp, warp 0 over the four warp sums, and writes partial[blockIdx.x];
//   2. every block of the scaling pass first adds all the partials itself (warp 0, fixed order,
//      so every block gets the same bits), then writes out = x * (1 / norm) over its slice.
#include <math.h>
#define BLOCK 128
#define WARPS (BLOCK / 32)
#define MAX_PARTS 32
#define ELEMS_PER_PART 8192

__device__ __forceinline__ double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void frob_partial_sums_f64(const float* __restrict__ x,
                                                 double* __restrict__ partial, int rows, int cols) {
    __shared__ double warp_sums[WARPS];
    const size_t n = (size_t)rows * cols;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    double acc = 0.0;
    const size_t stride = (size_t)gridDim.x * BLOCK;
    for (size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) {
        const double v = (double)x[i];
        acc += v * v;
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        warp_sums[warp] = acc;
    }
    __syncthreads();
    if (warp == 0) {
        double t = lane < WARPS ? warp_sums[lane] : 0.0;
        t = warp_sum(t);
        if (lane == 0) {
            partial[blockIdx.x] = t;
        }
    }
}

extern "C" __global__ void frob_scale_f64(const float* __restrict__ x,
                                          const double* __restrict__ partial,
                                          float* __restrict__ out, int rows, int cols) {
    __shared__ float s_inv;
    const size_t n = (size_t)rows * cols;
    const size_t blocks_needed = (n + ELEMS_PER_PART - 1) / ELEMS_PER_PART;  // launch 1's grid
    const int parts = blocks_needed < MAX_PARTS ? (int)blocks_needed : MAX_PARTS;
    if (threadIdx.x < 32) {
        double t = (int)threadIdx.x < parts ? partial[threadIdx.x] : 0.0;
        t = warp_sum(t);
        if (threadIdx.x == 0) {
            s_inv = (float)(1.0 / sqrt(t));
        }
    }
    __syncthreads();
    const float inv = s_inv;
    const size_t stride = (size_t)gridDim.x * BLOCK;
    for (size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) {
        out[i] = x[i] * inv;
    }
}
