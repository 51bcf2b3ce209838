/* mutagym
[[launch]]
kernel = "groupnorm_moments"
grid = ["batch * groups"]
block = [128]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "batch", "groups", "group_channels", "spatial", "eps"]
*/
// One 128-thread block per (batch, group) slab, one pass for the statistics: sum(x) and sum(x^2)
// accumulate in double (where E[x^2] - mean^2 does not cancel catastrophically for float data),
// reduced by shuffle-down in each warp and by warp 0 over the four warp results. The output loop
// walks channel by channel so each channel's weight and bias are read once per thread.
#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ __forceinline__ double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void groupnorm_moments(const float* __restrict__ x,
                                             const float* __restrict__ weight,
                                             const float* __restrict__ bias,
                                             float* __restrict__ out, int batch, int groups,
                                             int group_channels, int spatial, float eps) {
    __shared__ double w_s1[WARPS];
    __shared__ double w_s2[WARPS];
    __shared__ float stat[2];
    const int slab = blockIdx.x;
    const int g = slab % groups;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int len = group_channels * spatial;
    const float* xs = x + (size_t)slab * len;
    float* os = out + (size_t)slab * len;

    double s1 = 0.0, s2 = 0.0;
    for (int i = tid; i < len; i += BLOCK) {
        const double v = (double)xs[i];
        s1 += v;
        s2 += v * v;
    }
    s1 = warp_sum(s1);
    s2 = warp_sum(s2);
    if (lane == 0) {
        w_s1[warp] = s1;
        w_s2[warp] = s2;
    }
    __syncthreads();
    if (warp == 0) {
        double t1 = lane < WARPS ? w_s1[lane] : 0.0;
        double t2 = lane < WARPS ? w_s2[lane] : 0.0;
        t1 = warp_sum(t1);
        t2 = warp_sum(t2);
        if (lane == 0) {
            const double mean = t1 / (double)len;
            const double var = fmax(t2 / (double)len - mean * mean, 0.0);
            stat[0] = (float)mean;
            stat[1] = (float)(1.0 / sqrt(var + (double)eps));
        }
    }
    __syncthreads();
    const float mean = stat[0];
    const float inv_std = stat[1];

    for (int j = 0; j < group_channels; ++j) {
        const int c = g * group_channels + j;
        const float scale = inv_std * weight[c];
        const float shift = bias[c];
        const float* xc = xs + (size_t)j * spatial;
        float* oc = os + (size_t)j * spatial;
        for (int s = tid; s < spatial; s += BLOCK) {
            oc[s] = fmaf(xc[s] - mean, scale, shift);
        }
    }
}
