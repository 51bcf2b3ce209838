/* mutagym
[[launch]]
kernel = "gn_slab"
grid = ["batch * groups"]
block = [256]
args = ["x", "weight", "bias", "out", "batch", "groups", "group_channels", "spatial", "eps"]
*/
// Block per (batch, group) slab: mean and variance over the slab, then the group's scale and shift.
extern "C" __global__ void gn_slab(const float* x, const float* weight, const float* bias, float* out,
                                   int batch, int groups, int group_channels, int spatial, float eps) {
    __shared__ float r1[256], r2[256];
    const int g = blockIdx.x % groups;
    const long long len = (long long)group_channels * spatial;
    const float* in = x + blockIdx.x * len;
    float s = 0.0f;
    for (long long i = threadIdx.x; i < len; i += 256) s += in[i];
    r1[threadIdx.x] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) { if (threadIdx.x < h) r1[threadIdx.x] += r1[threadIdx.x + h]; __syncthreads(); }
    const float mean = r1[0] / len;
    float q = 0.0f;
    for (long long i = threadIdx.x; i < len; i += 256) { float d = in[i] - mean; q += d * d; }
    r2[threadIdx.x] = q;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) { if (threadIdx.x < h) r2[threadIdx.x] += r2[threadIdx.x + h]; __syncthreads(); }
    const float inv = rsqrtf(r2[0] / len + eps);
    const float w = weight[g * group_channels], b = bias[g * group_channels];
    for (long long i = threadIdx.x; i < len; i += 256) out[blockIdx.x * len + i] = (in[i] - mean) * inv * w + b;
}
