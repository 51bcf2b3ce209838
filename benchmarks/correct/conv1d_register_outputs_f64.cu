/* mutagym
[[launch]]
kernel = "conv1d_reg4_f64"
grid = ["ceil_div(out_len, 256)", "out_ch", "batch"]
block = [64]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "out_len", "ksize"]
*/
// Register blocking: each thread computes 4 consecutive output positions of one (batch, output
// channel) with 4 double accumulators; for every input channel it loads the 4 + ksize - 1 input
// values it needs once into registers (zero past the row's end) and reuses each tap's weight for
// all 4 outputs. No shared memory.
#define PER 4
#define MAX_K 15

extern "C" __global__ void conv1d_reg4_f64(const float* __restrict__ x, const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ out, int in_ch,
                                           int out_ch, int out_len, int ksize) {
    const int l0 = (blockIdx.x * blockDim.x + threadIdx.x) * PER;
    if (l0 >= out_len) return;
    const int o = blockIdx.y, b = blockIdx.z;
    const int in_len = out_len + ksize - 1;
    double acc[PER];
    for (int j = 0; j < PER; ++j) acc[j] = (double)bias[o];
    float window[PER + MAX_K - 1];
    for (int c = 0; c < in_ch; ++c) {
        const float* xr = x + ((size_t)b * in_ch + c) * in_len;
        for (int i = 0; i < PER + ksize - 1; ++i) window[i] = (l0 + i < in_len) ? xr[l0 + i] : 0.0f;
        const float* wr = weight + ((size_t)o * in_ch + c) * ksize;
        for (int t = 0; t < ksize; ++t) {
            const double w = wr[t];
            for (int j = 0; j < PER; ++j) acc[j] += w * (double)window[j + t];
        }
    }
    float* orow = out + ((size_t)b * out_ch + o) * out_len;
    for (int j = 0; j < PER; ++j) {
        if (l0 + j < out_len) orow[l0 + j] = (float)acc[j];
    }
}
