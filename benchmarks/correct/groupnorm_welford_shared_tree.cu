/* mutagym
[[launch]]
kernel = "groupnorm_welford_tree"
grid = ["batch * groups"]
block = [256]
args = ["x", "weight", "bias", "out", "groups", "group_channels", "spatial", "eps"]
*/
// One 256-thread block per (batch, group) slab. Each thread runs Welford's update in float32 over
// its strided slice of the slab; the (count, mean, M2) triples then merge by Chan's formula in a
// shared-memory tree (triple k absorbs triple k + half), and thread 0's result is the slab's.
// The output pass writes (x - mean) * rsqrt(M2 / len + eps) * weight[c] + bias[c].
#define BLOCK 256

__device__ __forceinline__ void chan_merge(float& n, float& mean, float& m2, float nb, float meanb, float m2b) {
    const float total = n + nb;
    if (nb == 0.0f) return;
    const float delta = meanb - mean;
    const float wb = nb / total;
    mean += delta * wb;
    m2 += m2b + delta * delta * n * wb;
    n = total;
}

extern "C" __global__ void groupnorm_welford_tree(const float* __restrict__ x, const float* __restrict__ weight,
                                                  const float* __restrict__ bias, float* __restrict__ out,
                                                  int groups, int group_channels, int spatial, float eps) {
    __shared__ float sn[BLOCK], smean[BLOCK], sm2[BLOCK];
    const int tid = threadIdx.x;
    const int g = blockIdx.x % groups;
    const int len = group_channels * spatial;
    const size_t base = (size_t)blockIdx.x * len;
    const float* xs = x + base;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int i = tid; i < len; i += BLOCK) {
        const float v = xs[i];
        n += 1.0f;
        const float delta = v - mean;
        mean += delta / n;
        m2 += delta * (v - mean);
    }
    sn[tid] = n;
    smean[tid] = mean;
    sm2[tid] = m2;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) {
            float a = sn[tid], b = smean[tid], c = sm2[tid];
            chan_merge(a, b, c, sn[tid + half], smean[tid + half], sm2[tid + half]);
            sn[tid] = a;
            smean[tid] = b;
            sm2[tid] = c;
        }
        __syncthreads();
    }
    const float slab_mean = smean[0];
    const float rstd = rsqrtf(fmaxf(sm2[0], 0.0f) / (float)len + eps);
    const float* w = weight + (size_t)g * group_channels;
    const float* b = bias + (size_t)g * group_channels;
    for (int i = tid; i < len; i += BLOCK) {
        const int c = i / spatial;
        out[base + i] = (xs[i] - slab_mean) * rstd * w[c] + b[c];
    }
}
