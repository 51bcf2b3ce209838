/* mutagym
[[launch]]
kernel = "channel_stats"
grid = ["groups * group_channels", "batch"]
block = [256]
args = ["x", "stats", "groups", "group_channels", "spatial"]

[[launch]]
kernel = "group_apply"
grid = ["groups * group_channels", "batch"]
block = [256]
args = ["x", "stats", "weight", "bias", "out", "groups", "group_channels", "spatial", "eps"]

[[scratch]]
name = "stats"
dtype = "float32"
size = "2 * batch * groups * group_channels"
*/
// Two launches: per-channel mean and variance (two-pass over the channel's spatial extent, one
// block per channel, so the work spreads over every channel), then each group's statistics are
// pooled from its channels' (equal counts: the mean of the means and the mean of the variances).
#define T 256

__device__ float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void channel_stats(const float* __restrict__ x, float* __restrict__ stats, int groups,
                                         int group_channels, int spatial) {
    __shared__ float sh[T];
    const int channels = groups * group_channels;
    const size_t ch = (size_t)blockIdx.y * channels + blockIdx.x;
    const float* xc = x + ch * spatial;
    float s = 0.f;
    for (int i = threadIdx.x; i < spatial; i += T) s += xc[i];
    const float mean = block_sum(s, sh) / spatial;
    float q = 0.f;
    for (int i = threadIdx.x; i < spatial; i += T) { const float d = xc[i] - mean; q += d * d; }
    const float var = block_sum(q, sh) / spatial;
    if (threadIdx.x == 0) { stats[2 * ch] = mean; stats[2 * ch + 1] = var; }
}

extern "C" __global__ void group_apply(const float* __restrict__ x, const float* __restrict__ stats,
                                       const float* __restrict__ weight, const float* __restrict__ bias,
                                       float* __restrict__ out, int groups, int group_channels, int spatial,
                                       float eps) {
    const int channels = groups * group_channels;
    const int c = blockIdx.x;
    const int first = (c / group_channels) * group_channels;
    const size_t row = (size_t)blockIdx.y * channels;
    float mean = 0.f, var = 0.f;
    for (int k = 0; k < group_channels; ++k) {
        mean += stats[2 * (row + first + k)];
        var += stats[2 * (row + first + k) + 1];
    }
    mean /= group_channels;
    var /= group_channels;
    const float rstd = rsqrtf(var + eps), g = weight[c], b = bias[c];
    const float* xc = x + (row + c) * spatial;
    float* oc = out + (row + c) * spatial;
    for (int i = threadIdx.x; i < spatial; i += T) oc[i] = (xc[i] - mean) * rstd * g + b;
}
