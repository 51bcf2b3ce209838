/* mutagym
[[launch]]
kernel = "conv1d_split_ci"
grid = ["ceil_div(out_len, 128)", "out_ch", "batch * ceil_div(in_ch, 16)"]
block = [128]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "out_len", "ksize", "ceil_div(in_ch, 16)"]
fill = {out = 0}
*/
// Split over input channels with atomics: blockIdx.z = b * splits + s covers batch b and the input
// channels [16 s, 16 s + 16). Each thread computes one output position's partial sum over its
// channels and the ksize taps (read straight from global memory, no staging), the split s = 0
// adds the bias, and the partial goes into out with a float atomicAdd (out starts at 0; the
// channel groups of an output land in any order).
#define CI_SPLIT 16

extern "C" __global__ void conv1d_split_ci(const float* __restrict__ x, const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* out, int in_ch, int out_ch,
                                           int out_len, int ksize, int splits) {
    const int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= out_len) return;
    const int o = blockIdx.y;
    const int b = blockIdx.z / splits;
    const int c0 = (blockIdx.z % splits) * CI_SPLIT;
    const int c1 = min(in_ch, c0 + CI_SPLIT);
    const int in_len = out_len + ksize - 1;
    float acc = c0 == 0 ? bias[o] : 0.0f;
    for (int c = c0; c < c1; ++c) {
        const float* xr = x + ((size_t)b * in_ch + c) * in_len + l;
        const float* wr = weight + ((size_t)o * in_ch + c) * ksize;
        for (int t = 0; t < ksize; ++t) acc += wr[t] * xr[t];
    }
    atomicAdd(out + ((size_t)b * out_ch + o) * out_len + l, acc);
}
