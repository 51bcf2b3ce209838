/* mutagym
# One 16x16 block per (16x16 output tile, batch * channels plane). The block stages the
# 32x32 input tile in shared memory (-INFINITY outside the image), synchronises, then each thread
# takes the max of its 2x2 window from shared memory.
[[launch]]
kernel = "maxpool2d_tiled"
grid = ["ceil_div(w // 2, 16)", "ceil_div(h // 2, 16)", "batch * channels"]
block = [16, 16]
args = ["x", "out", "h", "w"]
*/
#include <math.h>

#define TILE 16
#define IN_TILE (2 * TILE)

extern "C" __global__ void maxpool2d_tiled(const float* __restrict__ x, float* __restrict__ out, int h, int w) {
    __shared__ float tile[IN_TILE][IN_TILE];
    const int oh = h / 2;
    const int ow = w / 2;
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int ix0 = blockIdx.x * IN_TILE;
    const int iy0 = blockIdx.y * IN_TILE;
    const float* plane = x + (size_t)blockIdx.z * h * w;

    for (int idx = ty * TILE + tx; idx < IN_TILE * IN_TILE; idx += TILE * TILE) {
        const int r = idx / IN_TILE;
        const int c = idx % IN_TILE;
        const int gy = iy0 + r;
        const int gx = ix0 + c;
        tile[r][c] = (gy < h && gx < w) ? plane[(size_t)gy * w + gx] : -INFINITY;
    }
    __syncthreads();

    const int ox = blockIdx.x * TILE + tx;
    const int oy = blockIdx.y * TILE + ty;
    if (ox < ow && oy < oh) {
        const float top = fmaxf(tile[2 * ty][2 * tx], tile[2 * ty][2 * tx + 1]);
        const float bottom = fmaxf(tile[2 * ty + 1][2 * tx], tile[2 * ty + 1][2 * tx + 1]);
        out[((size_t)blockIdx.z * oh + oy) * ow + ox] = fmaxf(top, bottom);
    }
}
