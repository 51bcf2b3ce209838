/* mutagym
# One 16x16 block per (output tile, batch * out_ch). Input channels are processed in chunks of 4:
# the block stages an 18x18 input tile per channel (one-pixel halo, zeros outside the image) and
# the chunk's 3x3 weights in shared memory, synchronises, accumulates, and synchronises again.
[[launch]]
kernel = "conv2d_tiled"
grid = ["ceil_div(w, 16)", "ceil_div(h, 16)", "batch * out_ch"]
block = [16, 16]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "h", "w"]
*/
#define TILE 16
#define HALO_TILE (TILE + 2)
#define CI_TILE 4

extern "C" __global__ void conv2d_tiled(const float* __restrict__ x, const float* __restrict__ weight,
                                        const float* __restrict__ bias, float* __restrict__ out,
                                        int in_ch, int out_ch, int h, int w) {
    __shared__ float x_s[CI_TILE][HALO_TILE][HALO_TILE];
    __shared__ float w_s[CI_TILE][9];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * TILE + tx;
    const int ox0 = blockIdx.x * TILE;
    const int oy0 = blockIdx.y * TILE;
    const int oc = blockIdx.z % out_ch;
    const int b = blockIdx.z / out_ch;
    const size_t plane = (size_t)h * w;
    const float* xb = x + (size_t)b * in_ch * plane;

    float acc = 0.0f;
    for (int ci0 = 0; ci0 < in_ch; ci0 += CI_TILE) {
        for (int idx = tid; idx < CI_TILE * HALO_TILE * HALO_TILE; idx += TILE * TILE) {
            const int c = idx / (HALO_TILE * HALO_TILE);
            const int rem = idx - c * (HALO_TILE * HALO_TILE);
            const int r = rem / HALO_TILE;
            const int col = rem - r * HALO_TILE;
            const int ci = ci0 + c;
            const int gy = oy0 + r - 1;
            const int gx = ox0 + col - 1;
            float v = 0.0f;
            if (ci < in_ch && gy >= 0 && gy < h && gx >= 0 && gx < w) {
                v = xb[(size_t)ci * plane + (size_t)gy * w + gx];
            }
            x_s[c][r][col] = v;
        }
        if (tid < CI_TILE * 9) {
            const int c = tid / 9;
            const int k = tid - c * 9;
            const int ci = ci0 + c;
            w_s[c][k] = (ci < in_ch) ? weight[((size_t)oc * in_ch + ci) * 9 + k] : 0.0f;
        }
        __syncthreads();
        for (int c = 0; c < CI_TILE; ++c) {
            for (int ky = 0; ky < 3; ++ky) {
                for (int kx = 0; kx < 3; ++kx) {
                    acc += w_s[c][ky * 3 + kx] * x_s[c][ty + ky][tx + kx];
                }
            }
        }
        __syncthreads();
    }
    const int oy = oy0 + ty;
    const int ox = ox0 + tx;
    if (oy < h && ox < w) {
        out[((size_t)b * out_ch + oc) * plane + (size_t)oy * w + ox] = acc + bias[oc];
    }
}
