/* mutagym
# One 16x16 block per (output tile, batch * channels plane). The block stages the 18x18 input
# tile (one-pixel halo, zeros outside the image) in shared memory, synchronises, then each thread
# sums its 3x3 window and divides by 9.
[[launch]]
kernel = "avgpool2d_k3s1p1"
grid = ["ceil_div(w, 16)", "ceil_div(h, 16)", "batch * channels"]
block = [16, 16]
args = ["x", "out", "h", "w"]
*/
#define TILE 16
#define HALO_TILE (TILE + 2)

extern "C" __global__ void avgpool2d_k3s1p1(const float* __restrict__ x, float* __restrict__ out, int h, int w) {
    __shared__ float tile[HALO_TILE][HALO_TILE];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int ox0 = blockIdx.x * TILE;
    const int oy0 = blockIdx.y * TILE;
    const size_t plane_offset = (size_t)blockIdx.z * h * w;
    const float* plane = x + plane_offset;

    for (int idx = ty * TILE + tx; idx < HALO_TILE * HALO_TILE; idx += TILE * TILE) {
        const int r = idx / HALO_TILE;
        const int c = idx % HALO_TILE;
        const int gy = oy0 + r - 1;
        const int gx = ox0 + c - 1;
        tile[r][c] = (gy >= 0 && gy < h && gx >= 0 && gx < w) ? plane[(size_t)gy * w + gx] : 0.0f;
    }
    __syncthreads();

    const int oy = oy0 + ty;
    const int ox = ox0 + tx;
    if (oy < h && ox < w) {
        float sum = 0.0f;
        for (int dy = 0; dy < 3; ++dy) {
            for (int dx = 0; dx < 3; ++dx) {
                sum += tile[ty + dy][tx + dx];
            }
        }
        out[plane_offset + (size_t)oy * w + ox] = sum / 9.0f;
    }
}
