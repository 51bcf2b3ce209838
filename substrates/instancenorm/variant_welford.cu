/* mutagym
[[launch]]
kernel = "instancenorm_welford"
grid = ["batch * channels"]
block = [128]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "batch", "channels", "spatial", "eps"]
*/
// One 128-thread block per plane, one pass for the statistics: every thread runs Welford's update
// over its strided slice, then (count, mean, M2) triples merge pairwise (Chan et al.) by
// xor-shuffles inside each warp, and warp 0 merges the four warp results; var = M2 / spatial.
#include <math.h>
#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ __forceinline__ void welford_merge(float& n, float& mean, float& m2,
                                              float n_b, float mean_b, float m2_b) {
    const float n_ab = n + n_b;
    if (n_ab == 0.0f) {
        return;
    }
    const float delta = mean_b - mean;
    const float frac_b = n_b / n_ab;
    mean += delta * frac_b;
    m2 += m2_b + delta * delta * n * frac_b;
    n = n_ab;
}

__device__ __forceinline__ void warp_welford(float& n, float& mean, float& m2) {
    for (int mask = 16; mask > 0; mask >>= 1) {
        const float n_b = __shfl_xor_sync(0xffffffffu, n, mask);
        const float mean_b = __shfl_xor_sync(0xffffffffu, mean, mask);
        const float m2_b = __shfl_xor_sync(0xffffffffu, m2, mask);
        welford_merge(n, mean, m2, n_b, mean_b, m2_b);
    }
}

extern "C" __global__ void instancenorm_welford(const float* __restrict__ x,
                                                const float* __restrict__ weight,
                                                const float* __restrict__ bias,
                                                float* __restrict__ out, int batch, int channels,
                                                int spatial, float eps) {
    __shared__ float s_n[WARPS];
    __shared__ float s_mean[WARPS];
    __shared__ float s_m2[WARPS];
    __shared__ float s_stat[2];
    const int plane = blockIdx.x;
    const int c = plane % channels;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xp = x + (size_t)plane * spatial;
    float* op = out + (size_t)plane * spatial;

    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int i = tid; i < spatial; i += BLOCK) {
        const float v = xp[i];
        n += 1.0f;
        const float delta = v - mean;
        mean += delta / n;
        m2 += delta * (v - mean);
    }
    warp_welford(n, mean, m2);
    if (lane == 0) {
        s_n[warp] = n;
        s_mean[warp] = mean;
        s_m2[warp] = m2;
    }
    __syncthreads();
    if (warp == 0) {
        n = lane < WARPS ? s_n[lane] : 0.0f;
        mean = lane < WARPS ? s_mean[lane] : 0.0f;
        m2 = lane < WARPS ? s_m2[lane] : 0.0f;
        warp_welford(n, mean, m2);
        if (lane == 0) {
            s_stat[0] = mean;
            s_stat[1] = 1.0f / sqrtf(fmaxf(m2 / (float)spatial, 0.0f) + eps);
        }
    }
    __syncthreads();
    mean = s_stat[0];
    const float inv_std = s_stat[1];
    const float w = weight[c];
    const float b = bias[c];
    for (int i = tid; i < spatial; i += BLOCK) {
        op[i] = fmaf((xp[i] - mean) * inv_std, w, b);
    }
}
