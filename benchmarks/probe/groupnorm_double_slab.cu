/* mutagym
[[launch]]
kernel = "gn_f64"
grid = ["batch * groups"]
block = [128]
args = ["x", "weight", "bias", "out", "batch", "groups", "group_channels", "spatial", "eps"]
*/
// Block per (batch, group) slab; sum and sum of squares in double (no cancellation at float's
// scale), then each element gets its own channel's weight and bias.
extern "C" __global__ void gn_f64(const float* x, const float* weight, const float* bias, float* out,
                                  int batch, int groups, int group_channels, int spatial, float eps) {
    __shared__ double s1[128], s2[128];
    const int g = blockIdx.x % groups;
    const long long len = (long long)group_channels * spatial;
    const float* in = x + blockIdx.x * len;
    double a = 0.0, b = 0.0;
    for (long long i = threadIdx.x; i < len; i += 128) { double v = in[i]; a += v; b += v * v; }
    s1[threadIdx.x] = a;
    s2[threadIdx.x] = b;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if (threadIdx.x < h) { s1[threadIdx.x] += s1[threadIdx.x + h]; s2[threadIdx.x] += s2[threadIdx.x + h]; }
        __syncthreads();
    }
    const double mean = s1[0] / len;
    const double var = fmax(s2[0] / len - mean * mean, 0.0);
    const float inv = (float)(1.0 / sqrt(var + (double)eps));
    for (long long i = threadIdx.x; i < len; i += 128) {
        const int c = g * group_channels + (int)(i / spatial);
        out[blockIdx.x * len + i] = (float)(in[i] - mean) * inv * weight[c] + bias[c];
    }
}
