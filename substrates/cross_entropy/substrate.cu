/* mutagym
# Pass 1: one block per row. Block max (warp shuffles + shared memory), broadcast, block sum of
# exp(x - max), then thread 0 writes the row loss log(sum) + max - x[label].
[[launch]]
kernel = "cross_entropy_rows"
grid = ["batch"]
block = [128]
args = ["logits", "labels", "row_loss", "classes"]

# Pass 2: one block averages the per-row losses.
[[launch]]
kernel = "cross_entropy_mean"
grid = [1]
block = [256]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float32"
size = "batch"
*/
#include <math.h>
#include <stdint.h>

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_reduce_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = fmaxf(v, __shfl_down_sync(FULL_MASK, v, offset));
    }
    return v;
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

extern "C" __global__ void cross_entropy_rows(const float* __restrict__ logits,
                                              const int64_t* __restrict__ labels,
                                              float* __restrict__ row_loss, int classes) {
    __shared__ float warp_vals[32];
    __shared__ float row_max;
    const int row = blockIdx.x;
    const float* x = logits + (size_t)row * (size_t)classes;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int num_warps = blockDim.x >> 5;

    // Row maximum.
    float m = -INFINITY;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) {
        m = fmaxf(m, x[j]);
    }
    m = warp_reduce_max(m);
    if (lane == 0) {
        warp_vals[warp] = m;
    }
    __syncthreads();
    if (warp == 0) {
        m = (lane < num_warps) ? warp_vals[lane] : -INFINITY;
        m = warp_reduce_max(m);
        if (lane == 0) {
            row_max = m;
        }
    }
    __syncthreads();
    m = row_max;

    // Sum of exp(x - max).
    float s = 0.0f;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) {
        s += expf(x[j] - m);
    }
    s = warp_reduce_sum(s);
    if (lane == 0) {
        warp_vals[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        s = (lane < num_warps) ? warp_vals[lane] : 0.0f;
        s = warp_reduce_sum(s);
        if (lane == 0) {
            const int label = (int)labels[row];
            row_loss[row] = logf(s) + m - x[label];
        }
    }
}

extern "C" __global__ void cross_entropy_mean(const float* __restrict__ row_loss,
                                              float* __restrict__ out, int batch) {
    __shared__ float warp_vals[32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    float s = 0.0f;
    for (int i = threadIdx.x; i < batch; i += blockDim.x) {
        s += row_loss[i];
    }
    s = warp_reduce_sum(s);
    if (lane == 0) {
        warp_vals[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        s = (lane < (int)(blockDim.x >> 5)) ? warp_vals[lane] : 0.0f;
        s = warp_reduce_sum(s);
        if (lane == 0) {
            out[0] = s / (float)batch;
        }
    }
}
