/* mutagym
[[launch]]
kernel = "inorm_planes"
grid = ["channels", "batch"]
block = [512]
args = ["x", "weight", "bias", "out", "channels", "spatial", "eps"]
*/
// One block per (batch, channel) plane. Statistics in one pass over x - K with K the plane's first
// element (shifted data: robust to a large offset of the plane), warp shuffles then one slot per warp.
#define T 512

extern "C" __global__ void inorm_planes(const float* __restrict__ x, const float* __restrict__ weight,
                                        const float* __restrict__ bias, float* __restrict__ out,
                                        int channels, int spatial, float eps) {
    __shared__ float s1w[T / 32], s2w[T / 32];
    __shared__ float stats[2];
    const int c = blockIdx.x;
    const size_t plane = ((size_t)blockIdx.y * channels + c) * spatial;
    const float* xp = x + plane;
    const float K = xp[0];
    float s1 = 0.f, s2 = 0.f;
    for (int i = threadIdx.x; i < spatial; i += T) {
        const float d = xp[i] - K;
        s1 += d;
        s2 = fmaf(d, d, s2);
    }
    for (int off = 16; off > 0; off >>= 1) {
        s1 += __shfl_down_sync(0xffffffffu, s1, off);
        s2 += __shfl_down_sync(0xffffffffu, s2, off);
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { s1w[warp] = s1; s2w[warp] = s2; }
    __syncthreads();
    if (threadIdx.x == 0) {
        float a = 0.f, b = 0.f;
        for (int w = 0; w < T / 32; ++w) { a += s1w[w]; b += s2w[w]; }
        const float n = (float)spatial;
        stats[0] = K + a / n;
        stats[1] = rsqrtf(fmaxf(b / n - (a / n) * (a / n), 0.f) + eps);
    }
    __syncthreads();
    const float mean = stats[0], rstd = stats[1], g = weight[c], be = bias[c];
    for (int i = threadIdx.x; i < spatial; i += T) out[plane + i] = (xp[i] - mean) * rstd * g + be;
}
