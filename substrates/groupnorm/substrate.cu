/* mutagym
[[launch]]
kernel = "groupnorm_slabs"
grid = ["batch * groups"]
block = [256]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "batch", "groups", "group_channels", "spatial", "eps"]
*/
// One block per (batch, group) slab of len = group_channels * spatial contiguous elements.
// Two passes for the statistics, each a shared-memory tree sum:
//   mean = sum(x) / len, var = sum((x - mean)^2) / len (biased);
// then out = (x - mean) * rsqrt(var + eps) * weight[c] + bias[c] with the channel
// c = g * group_channels + i / spatial.
#define BLOCK 256

// Tree-sum of one value per thread; every thread returns the total. Ends with a barrier so the
// buffer can be reused.
__device__ float block_sum(float v, float* buf) {
    const int tid = threadIdx.x;
    buf[tid] = v;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            buf[tid] += buf[tid + stride];
        }
        __syncthreads();
    }
    const float total = buf[0];
    __syncthreads();
    return total;
}

extern "C" __global__ void groupnorm_slabs(const float* __restrict__ x,
                                           const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ out,
                                           int batch, int groups, int group_channels, int spatial,
                                           float eps) {
    __shared__ float buf[BLOCK];
    const int slab = blockIdx.x;            // = b * groups + g
    const int g = slab % groups;
    const int tid = threadIdx.x;
    const int len = group_channels * spatial;
    const float* xs = x + (size_t)slab * len;
    float* os = out + (size_t)slab * len;

    float s = 0.0f;
    for (int i = tid; i < len; i += BLOCK) {
        s += xs[i];
    }
    const float mean = block_sum(s, buf) / (float)len;

    float sq = 0.0f;
    for (int i = tid; i < len; i += BLOCK) {
        const float d = xs[i] - mean;
        sq += d * d;
    }
    const float var = block_sum(sq, buf) / (float)len;
    const float inv_std = rsqrtf(var + eps);

    const float* wg = weight + g * group_channels;
    const float* bg = bias + g * group_channels;
    for (int i = tid; i < len; i += BLOCK) {
        const int j = i / spatial;          // channel inside the group
        os[i] = (xs[i] - mean) * inv_std * wg[j] + bg[j];
    }
}
