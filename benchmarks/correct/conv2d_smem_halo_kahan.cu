/* mutagym
[[launch]]
kernel = "conv2d_halo_kahan"
grid = ["ceil_div(w, 32)", "ceil_div(h, 8)", "batch * out_ch"]
block = [32, 8]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "h", "w"]
*/
// A 32 x 8 output tile per block; for each input channel the block stages the tile's 34 x 10
// input window (one-pixel halo, zeros outside the image) and the channel's 3 x 3 weights in
// shared memory, and every thread adds its 9 products to a Kahan-compensated float32 sum.
#define TW 32
#define TH 8

extern "C" __global__ void conv2d_halo_kahan(const float* __restrict__ x, const float* __restrict__ weight,
                                             const float* __restrict__ bias, float* __restrict__ out, int in_ch,
                                             int out_ch, int h, int w) {
    __shared__ float tile[TH + 2][TW + 2];
    __shared__ float wk[9];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TW + tx;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    const int o = blockIdx.z % out_ch, b = blockIdx.z / out_ch;
    const int xo = x0 + tx, yo = y0 + ty;
    float s = 0.0f, comp = 0.0f;
    for (int c = 0; c < in_ch; ++c) {
        const float* xp = x + ((size_t)b * in_ch + c) * h * w;
        for (int e = tid; e < (TH + 2) * (TW + 2); e += TW * TH) {
            const int r = e / (TW + 2), q = e % (TW + 2);
            const int yi = y0 + r - 1, xi = x0 + q - 1;
            tile[r][q] = (yi >= 0 && yi < h && xi >= 0 && xi < w) ? xp[(size_t)yi * w + xi] : 0.0f;
        }
        if (tid < 9) wk[tid] = weight[((size_t)o * in_ch + c) * 9 + tid];
        __syncthreads();
        for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
                const float y = wk[ky * 3 + kx] * tile[ty + ky][tx + kx] - comp;
                const float t = s + y;
                comp = (t - s) - y;
                s = t;
            }
        }
        __syncthreads();
    }
    if (xo < w && yo < h) out[((size_t)blockIdx.z * h + yo) * w + xo] = bias[o] + (s - comp);
}
