/* mutagym
[[launch]]
kernel = "instancenorm_warp_planes"
grid = ["ceil_div(batch * channels, 4)"]
block = [128]
args = ["x", "weight", "bias", "out", "batch * channels", "channels", "spatial", "eps"]
*/
// One warp per (batch, channel) plane, four planes per block. One pass in double with a shift:
// lanes sum d = x - K and d^2 with K the plane's first element, an xor-shuffle butterfly gives
// every lane both sums, mean = K + s1 / n and var = s2 / n - (s1 / n)^2; the output pass works in
// float32 with the double statistics rounded once.
extern "C" __global__ void instancenorm_warp_planes(const float* __restrict__ x, const float* __restrict__ weight,
                                                    const float* __restrict__ bias, float* __restrict__ out,
                                                    int planes, int channels, int spatial, float eps) {
    const int lane = threadIdx.x & 31;
    const int plane = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (plane >= planes) return;   // whole warps leave
    const size_t base = (size_t)plane * spatial;
    const float* xp = x + base;
    const double k = (double)xp[0];
    double s1 = 0.0, s2 = 0.0;
    for (int i = lane; i < spatial; i += 32) {
        const double d = (double)xp[i] - k;
        s1 += d;
        s2 += d * d;
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        s1 += __shfl_xor_sync(0xffffffffu, s1, mask);
        s2 += __shfl_xor_sync(0xffffffffu, s2, mask);
    }
    const double shift_mean = s1 / spatial;
    const double var = fmax(s2 / spatial - shift_mean * shift_mean, 0.0);
    const float mean = (float)(k + shift_mean);
    const int c = plane % channels;
    const float scale = (float)(1.0 / sqrt(var + (double)eps)) * weight[c];
    const float shift = bias[c];
    for (int i = lane; i < spatial; i += 32) out[base + i] = (xp[i] - mean) * scale + shift;
}
