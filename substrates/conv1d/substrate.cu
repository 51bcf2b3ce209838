/* mutagym
# One block per (128-position tile, output channel, batch). Input channels are processed in
# chunks of 8: the block stages x[b, c, l0 : l0 + 128 + ksize - 1] (zero past the end) and the
# matching weights in shared memory, synchronises, accumulates, and synchronises again.
[[launch]]
kernel = "conv1d_tiled"
grid = ["ceil_div(out_len, 128)", "out_ch", "batch"]
block = [128]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "out_len", "ksize"]
*/
#define TILE_L 128
#define CI_TILE 8
#define MAX_K 15

extern "C" __global__ void conv1d_tiled(const float* __restrict__ x, const float* __restrict__ weight,
                                        const float* __restrict__ bias, float* __restrict__ out,
                                        int in_ch, int out_ch, int out_len, int ksize) {
    __shared__ float x_s[CI_TILE][TILE_L + MAX_K - 1];
    __shared__ float w_s[CI_TILE][MAX_K];
    const int in_len = out_len + ksize - 1;
    const int span = TILE_L + ksize - 1;
    const int l0 = blockIdx.x * TILE_L;
    const int oc = blockIdx.y;
    const int b = blockIdx.z;
    const int l = l0 + threadIdx.x;
    const float* xb = x + (size_t)b * in_ch * in_len;
    const float* wo = weight + (size_t)oc * in_ch * ksize;

    float acc = 0.0f;
    for (int ci0 = 0; ci0 < in_ch; ci0 += CI_TILE) {
        for (int idx = threadIdx.x; idx < CI_TILE * span; idx += blockDim.x) {
            const int c = idx / span;
            const int j = idx - c * span;
            const int ci = ci0 + c;
            const int gl = l0 + j;
            x_s[c][j] = (ci < in_ch && gl < in_len) ? xb[(size_t)ci * in_len + gl] : 0.0f;
        }
        for (int idx = threadIdx.x; idx < CI_TILE * ksize; idx += blockDim.x) {
            const int c = idx / ksize;
            const int k = idx - c * ksize;
            const int ci = ci0 + c;
            w_s[c][k] = (ci < in_ch) ? wo[ci * ksize + k] : 0.0f;
        }
        __syncthreads();
        const int chunk = min(CI_TILE, in_ch - ci0);
        for (int c = 0; c < chunk; ++c) {
            for (int k = 0; k < ksize; ++k) {
                acc += w_s[c][k] * x_s[c][threadIdx.x + k];
            }
        }
        __syncthreads();
    }
    if (l < out_len) {
        out[((size_t)b * out_ch + oc) * out_len + l] = acc + bias[oc];
    }
}
