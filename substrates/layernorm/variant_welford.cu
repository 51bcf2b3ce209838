/* mutagym
[[launch]]
kernel = "layernorm_welford"
grid = ["rows"]
block = [64]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// LayerNorm, variant: one pass with Welford's running mean and M2 per thread, merged with Chan's
// pairwise formula, first across each warp with __shfl_down_sync and then across the block's
// warps by thread 0. 64-thread blocks, one block per row.
#define WF_BLOCK 64
#define WF_WARPS (WF_BLOCK / 32)

// Fold the statistics (nb, mb, m2b) of another partition into (n, mean, m2).
__device__ __forceinline__ void welford_merge(float& n, float& mean, float& m2,
                                              float nb, float mb, float m2b) {
    if (nb == 0.0f) return;
    const float total = n + nb;
    const float delta = mb - mean;
    const float frac = nb / total;
    mean += delta * frac;
    m2 += m2b + delta * delta * n * frac;
    n = total;
}

extern "C" __global__ void layernorm_welford(const float* __restrict__ x, const float* __restrict__ weight,
                                             const float* __restrict__ bias, float* __restrict__ out,
                                             int rows, int cols, float eps) {
    __shared__ float s_n[WF_WARPS];
    __shared__ float s_mean[WF_WARPS];
    __shared__ float s_m2[WF_WARPS];
    __shared__ float s_stats[2];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;
    float* yr = out + (size_t)row * cols;

    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int c = tid; c < cols; c += WF_BLOCK) {
        const float v = xr[c];
        n += 1.0f;
        const float delta = v - mean;
        mean += delta / n;
        m2 += delta * (v - mean);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float nb = __shfl_down_sync(0xffffffffu, n, offset);
        const float mb = __shfl_down_sync(0xffffffffu, mean, offset);
        const float m2b = __shfl_down_sync(0xffffffffu, m2, offset);
        welford_merge(n, mean, m2, nb, mb, m2b);
    }
    if (lane == 0) {
        s_n[warp] = n;
        s_mean[warp] = mean;
        s_m2[warp] = m2;
    }
    __syncthreads();
    if (tid == 0) {
        float tn = s_n[0], tmean = s_mean[0], tm2 = s_m2[0];
        for (int w = 1; w < WF_WARPS; ++w) {
            welford_merge(tn, tmean, tm2, s_n[w], s_mean[w], s_m2[w]);
        }
        s_stats[0] = tmean;
        s_stats[1] = rsqrtf(tm2 / (float)cols + eps);
    }
    __syncthreads();
    const float mu = s_stats[0];
    const float rstd = s_stats[1];

    for (int c = tid; c < cols; c += WF_BLOCK) {
        const float xhat = (xr[c] - mu) * rstd;
        yr[c] = xhat * weight[c] + bias[c];
    }
}
