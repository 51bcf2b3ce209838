/* mutagym
[[launch]]
kernel = "matmul_regtile"
grid = ["ceil_div(n, 64)", "ceil_div(n, 64)"]
block = [16, 16]
args = ["a", "b", "out", "n"]
*/
// Register tiling: a 16 x 16 block computes a 64 x 64 tile of out, every thread a 4 x 4 micro-tile
// whose rows and columns are 16 apart (ty + 16 i, tx + 16 j), from 64 x 16 panels of a and
// 16 x 64 panels of b in shared memory (zero-padded past the matrix edge). Blocked summation:
// each 16-deep panel's products are summed into a fresh float32 register, which is then added
// to the output's running total, so the long sum over k has n / 16 roundings at its full
// magnitude instead of n. The micro-tile reuses every loaded a and b value four times.
#define TILE 64
#define BK 16
#define R 4

extern "C" __global__ void matmul_regtile(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ out, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 16 + tx;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[R][R];
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < R; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < n; k0 += BK) {
        for (int e = tid; e < TILE * BK; e += 256) {   // 4 loads of each panel per thread
            const int r = e / BK, kk = e % BK;
            const int gr = row0 + r, gk = k0 + kk;
            As[r][kk] = (gr < n && gk < n) ? a[(size_t)gr * n + gk] : 0.0f;
            const int br = e / TILE, bc = e % TILE;
            const int gbk = k0 + br, gbc = col0 + bc;
            Bs[br][bc] = (gbk < n && gbc < n) ? b[(size_t)gbk * n + gbc] : 0.0f;
        }
        __syncthreads();
        float panel[R][R];
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < R; ++j) panel[i][j] = 0.0f;
        for (int kk = 0; kk < BK; ++kk) {
            float av[R], bv[R];
            for (int i = 0; i < R; ++i) av[i] = As[ty + 16 * i][kk];
            for (int j = 0; j < R; ++j) bv[j] = Bs[kk][tx + 16 * j];
            for (int i = 0; i < R; ++i)
                for (int j = 0; j < R; ++j) panel[i][j] += av[i] * bv[j];
        }
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < R; ++j) acc[i][j] += panel[i][j];
        __syncthreads();
    }
    for (int i = 0; i < R; ++i) {
        const int r = row0 + ty + 16 * i;
        for (int j = 0; j < R; ++j) {
            const int c = col0 + tx + 16 * j;
            if (r < n && c < n) out[(size_t)r * n + c] = acc[i][j];
        }
    }
}
