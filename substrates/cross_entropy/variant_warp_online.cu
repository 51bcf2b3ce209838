/* mutagym
# Variant: one warp per row with an online (single-pass) softmax normaliser: each lane keeps a
# running max and a rescaled sum, lanes merge (max, sum) pairs with an xor-butterfly, lane 0 adds
# the row loss to a zero-initialised double accumulator; a one-thread launch divides by batch.
[[launch]]
kernel = "cross_entropy_warp_rows"
grid = ["ceil_div(batch, 8)"]
block = [256]
args = ["logits", "labels", "acc", "batch", "classes"]

[[launch]]
kernel = "cross_entropy_write_mean"
grid = [1]
block = [1]
args = ["acc", "out", "batch"]

[[scratch]]
name = "acc"
dtype = "float64"
size = "1"
init = "zero"
*/
#include <math.h>
#include <stdint.h>

#define FULL_MASK 0xffffffffu
#define WARPS_PER_BLOCK 8

extern "C" __global__ void cross_entropy_warp_rows(const float* __restrict__ logits,
                                                   const int64_t* __restrict__ labels,
                                                   double* __restrict__ acc, int batch, int classes) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= batch) {
        return;  // the whole warp leaves together; no block-wide barrier follows
    }
    const float* x = logits + (size_t)row * (size_t)classes;

    float m = -INFINITY;
    float s = 0.0f;
    for (int j = lane; j < classes; j += 32) {
        const float v = x[j];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else if (m != -INFINITY) {  // a -inf (masked) entry while m is still -inf adds
            s += expf(v - m);          // nothing: expf(-inf - -inf) would be NaN
        }
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        const float m_other = __shfl_xor_sync(FULL_MASK, m, mask);
        const float s_other = __shfl_xor_sync(FULL_MASK, s, mask);
        const float m_new = fmaxf(m, m_other);
        if (m_new == -INFINITY) {
            s = 0.0f;  // both lanes saw no element
        } else {
            s = s * expf(m - m_new) + s_other * expf(m_other - m_new);
        }
        m = m_new;
    }
    if (lane == 0) {
        const int label = (int)labels[row];
        const float loss = logf(s) + m - x[label];
        atomicAdd(acc, (double)loss);
    }
}

extern "C" __global__ void cross_entropy_write_mean(const double* __restrict__ acc,
                                                    float* __restrict__ out, int batch) {
    if (threadIdx.x == 0) {
        out[0] = (float)(acc[0] / (double)batch);
    }
}
