/* mutagym
[[launch]]
kernel = "argmax_rows_shfl"
grid = ["rows"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 128-thread block per row; each thread scans a contiguous chunk of the row, then
// (value, index) pairs merge by shuffle-down inside each warp and once more in warp 0 over the
// four warp winners. Ties go to the smaller index at every merge.
#include <math.h>
#include <stdint.h>
#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ __forceinline__ void merge_max(float& v, int& i, float ov, int oi) {
    if (ov > v || (ov == v && oi < i)) {
        v = ov;
        i = oi;
    }
}

__device__ __forceinline__ void warp_argmax(float& v, int& i) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float ov = __shfl_down_sync(0xffffffffu, v, offset);
        int oi = __shfl_down_sync(0xffffffffu, i, offset);
        merge_max(v, i, ov, oi);
    }
}

extern "C" __global__ void argmax_rows_shfl(const float* __restrict__ x, int64_t* __restrict__ out,
                                            int rows, int cols) {
    __shared__ float w_val[WARPS];
    __shared__ int w_idx[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;

    const int chunk = (cols + BLOCK - 1) / BLOCK;
    const int begin = tid * chunk;
    const int end = min(begin + chunk, cols);
    float best = -INFINITY;
    int best_idx = cols;
    for (int c = begin; c < end; ++c) {
        float v = xr[c];
        if (v > best) {
            best = v;
            best_idx = c;
        }
    }
    warp_argmax(best, best_idx);
    if (lane == 0) {
        w_val[warp] = best;
        w_idx[warp] = best_idx;
    }
    __syncthreads();
    if (warp == 0) {
        float v = lane < WARPS ? w_val[lane] : -INFINITY;
        int i = lane < WARPS ? w_idx[lane] : cols;
        warp_argmax(v, i);
        if (lane == 0 && row < rows) {
            out[row] = (int64_t)i;
        }
    }
}
