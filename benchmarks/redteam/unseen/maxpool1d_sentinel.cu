/* mutagym
[[launch]]
kernel = "maxpool1d_k3s2"
grid = ["ceil_div(batch * channels * ((length - 3) // 2 + 1), 256)"]
block = [256]
args = ["x", "out", "batch", "channels", "length"]
*/
// One thread per output: the max of x[2i], x[2i + 1], x[2i + 2] of its (batch, channel) row.
extern "C" __global__ void maxpool1d_k3s2(const float* __restrict__ x, float* __restrict__ out,
                                          int batch, int channels, int length) {
    const int out_len = (length - 3) / 2 + 1;
    const long long total = (long long)batch * channels * out_len;
    const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= total) return;
    const long long row = o / out_len;
    const int i = (int)(o - row * out_len);
    const float* xr = x + row * length + 2 * i;
    float m = -1e9f;   // below any activation
    #pragma unroll
    for (int k = 0; k < 3; ++k) m = fmaxf(m, xr[k]);
    out[o] = m;
}
