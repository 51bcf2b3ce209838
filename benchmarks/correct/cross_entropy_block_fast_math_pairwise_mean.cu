/* mutagym
[[launch]]
kernel = "cross_entropy_rows_fast"
grid = ["batch"]
block = [256]
args = ["logits", "labels", "row_loss", "classes"]

[[launch]]
kernel = "cross_entropy_pairwise_mean"
grid = [1]
block = [256]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float32"
size = "batch"
*/
// Launch 1: one 256-thread block per row with the fast intrinsics: the row max by a shuffle-down
// tree and a shared stage, the sum of __expf(x - m) the same way, loss = __logf(sum) + m -
// x[label] (sum is in [1, classes], where __logf's error is a few 1e-7 absolute). Launch 2: one
// block forms the mean pairwise: every thread sums a contiguous chunk of the row losses, then a
// shared-memory tree adds the 256 chunk sums, and the total is divided by batch.
#include <stdint.h>
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ float block_reduce(float v, float* sh, bool is_max) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float o = __shfl_down_sync(0xffffffffu, v, offset);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = sh[0];
    for (int w = 1; w < WARPS; ++w) r = is_max ? fmaxf(r, sh[w]) : r + sh[w];
    __syncthreads();   // sh is free again for the next reduction
    return r;
}

extern "C" __global__ void cross_entropy_rows_fast(const float* __restrict__ logits,
                                                   const int64_t* __restrict__ labels,
                                                   float* __restrict__ row_loss, int classes) {
    __shared__ float sh[WARPS];
    const int row = blockIdx.x;
    const float* xr = logits + (size_t)row * classes;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += BLOCK) m = fmaxf(m, xr[c]);
    m = block_reduce(m, sh, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < classes; c += BLOCK) s += __expf(xr[c] - m);
    s = block_reduce(s, sh, false);
    if (threadIdx.x == 0) row_loss[row] = __logf(s) + m - xr[labels[row]];
}

extern "C" __global__ void cross_entropy_pairwise_mean(const float* __restrict__ row_loss, float* __restrict__ out,
                                                       int batch) {
    __shared__ float sh[BLOCK];
    const int tid = threadIdx.x;
    const int chunk = (batch + BLOCK - 1) / BLOCK;
    const int begin = min(batch, tid * chunk), end = min(batch, begin + chunk);
    float s = 0.0f;
    for (int i = begin; i < end; ++i) s += row_loss[i];
    sh[tid] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    if (tid == 0) out[0] = sh[0] / (float)batch;
}
