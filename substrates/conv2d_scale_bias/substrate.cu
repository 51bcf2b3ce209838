/* mutagym
# One 32x8 block per (output tile, batch * out_ch). Input channels are processed in chunks of 4:
# the block stages a 34x10 input tile per channel (one-pixel halo, zeros outside the image) and
# the chunk's 3x3 weights in shared memory, synchronises, accumulates, and synchronises again.
# The epilogue applies bias, then the per-channel scale, then the per-channel shift.
[[launch]]
kernel = "conv2d_scale_bias_tiled"
grid = ["ceil_div(w, 32)", "ceil_div(h, 8)", "batch * out_ch"]
block = [32, 8]
args = ["x", "weight", "bias", "scale", "shift", "out", "in_ch", "out_ch", "h", "w"]
*/
#define TILE_W 32
#define TILE_H 8
#define HALO_W (TILE_W + 2)
#define HALO_H (TILE_H + 2)
#define CI_TILE 4
#define THREADS (TILE_W * TILE_H)

extern "C" __global__ void conv2d_scale_bias_tiled(const float* __restrict__ x,
                                                   const float* __restrict__ weight,
                                                   const float* __restrict__ bias,
                                                   const float* __restrict__ scale,
                                                   const float* __restrict__ shift,
                                                   float* __restrict__ out,
                                                   int in_ch, int out_ch, int h, int w) {
    __shared__ float x_s[CI_TILE][HALO_H][HALO_W];
    __shared__ float w_s[CI_TILE][9];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * TILE_W + tx;
    const int ox0 = blockIdx.x * TILE_W;
    const int oy0 = blockIdx.y * TILE_H;
    const int oc = blockIdx.z % out_ch;
    const int b = blockIdx.z / out_ch;
    const size_t plane = (size_t)h * w;
    const float* xb = x + (size_t)b * in_ch * plane;
    const float* wo = weight + (size_t)oc * in_ch * 9;

    float acc = 0.0f;
    for (int ci0 = 0; ci0 < in_ch; ci0 += CI_TILE) {
        for (int idx = tid; idx < CI_TILE * HALO_H * HALO_W; idx += THREADS) {
            const int c = idx / (HALO_H * HALO_W);
            const int rem = idx % (HALO_H * HALO_W);
            const int r = rem / HALO_W;
            const int col = rem % HALO_W;
            const int ci = ci0 + c;
            const int gy = oy0 + r - 1;
            const int gx = ox0 + col - 1;
            const bool inside = ci < in_ch && gy >= 0 && gy < h && gx >= 0 && gx < w;
            x_s[c][r][col] = inside ? xb[(size_t)ci * plane + (size_t)gy * w + gx] : 0.0f;
        }
        if (tid < CI_TILE * 9) {
            const int ci = ci0 + tid / 9;
            w_s[tid / 9][tid % 9] = (ci < in_ch) ? wo[(size_t)ci * 9 + tid % 9] : 0.0f;
        }
        __syncthreads();
        const int chunk = min(CI_TILE, in_ch - ci0);
        for (int c = 0; c < chunk; ++c) {
            acc += w_s[c][0] * x_s[c][ty][tx] + w_s[c][1] * x_s[c][ty][tx + 1] + w_s[c][2] * x_s[c][ty][tx + 2];
            acc += w_s[c][3] * x_s[c][ty + 1][tx] + w_s[c][4] * x_s[c][ty + 1][tx + 1] + w_s[c][5] * x_s[c][ty + 1][tx + 2];
            acc += w_s[c][6] * x_s[c][ty + 2][tx] + w_s[c][7] * x_s[c][ty + 2][tx + 1] + w_s[c][8] * x_s[c][ty + 2][tx + 2];
        }
        __syncthreads();
    }
    const int oy = oy0 + ty;
    const int ox = ox0 + tx;
    if (oy < h && ox < w) {
        const float y = acc + bias[oc];
        out[((size_t)b * out_ch + oc) * plane + (size_t)oy * w + ox] = y * scale[oc] + shift[oc];
    }
}
