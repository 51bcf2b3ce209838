/* mutagym
# Variant: one block per row with pure shared-memory tree reductions (max in float, sum of
# exp in double), row losses in double scratch, and a single-warp double reduction over rows.
[[launch]]
kernel = "cross_entropy_rows_tree"
grid = ["batch"]
block = [128]
args = ["logits", "labels", "row_loss", "classes"]

[[launch]]
kernel = "cross_entropy_mean_warp"
grid = [1]
block = [32]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float64"
size = "batch"
*/
#include <math.h>
#include <stdint.h>

#define BLOCK 128
#define FULL_MASK 0xffffffffu

extern "C" __global__ void cross_entropy_rows_tree(const float* __restrict__ logits,
                                                   const int64_t* __restrict__ labels,
                                                   double* __restrict__ row_loss, int classes) {
    __shared__ float smax[BLOCK];
    __shared__ double ssum[BLOCK];
    const int tid = threadIdx.x;
    const float* x = logits + (size_t)blockIdx.x * (size_t)classes;

    float m = -INFINITY;
    for (int j = tid; j < classes; j += BLOCK) {
        m = fmaxf(m, x[j]);
    }
    smax[tid] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            smax[tid] = fmaxf(smax[tid], smax[tid + s]);
        }
        __syncthreads();
    }
    m = smax[0];

    double sum = 0.0;
    for (int j = tid; j < classes; j += BLOCK) {
        sum += (double)expf(x[j] - m);
    }
    ssum[tid] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            ssum[tid] += ssum[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        const int label = (int)labels[blockIdx.x];
        row_loss[blockIdx.x] = log(ssum[0]) + (double)m - (double)x[label];
    }
}

extern "C" __global__ void cross_entropy_mean_warp(const double* __restrict__ row_loss,
                                                   float* __restrict__ out, int batch) {
    double s = 0.0;
    for (int i = threadIdx.x; i < batch; i += 32) {
        s += row_loss[i];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        s += __shfl_down_sync(FULL_MASK, s, offset);
    }
    if (threadIdx.x == 0) {
        out[0] = (float)(s / (double)batch);
    }
}
