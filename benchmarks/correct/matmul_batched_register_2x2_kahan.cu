/* mutagym
[[launch]]
kernel = "bmm_regtile_kahan"
grid = ["ceil_div(n, 2 * min(ceil_div(n, 2), 8))", "ceil_div(m, 2 * min(ceil_div(m, 2), 8))", "batch"]
block = ["min(ceil_div(n, 2), 8)", "min(ceil_div(m, 2), 8)"]
args = ["a", "b", "out", "m", "k", "n"]
*/
// Batched product with a 2 x 2 register micro-tile per thread: a block of at most 8 x 8 threads
// (shrinking with m and n, so a 2 x 2 output is one thread) computes a tile of out[z] twice its
// size, outputs (ty + by i, tx + bx j), from 16 x 64 panels of a[z] and 64 x 16 panels of b[z] in
// shared memory (zero-padded past m and n; 64-deep panels keep the barriers few on a long k),
// and every output keeps a Kahan-compensated float32 sum over k.
#define TILE 16
#define BK 64

extern "C" __global__ void bmm_regtile_kahan(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ out, int m, int k, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];
    const int bx = blockDim.x, by = blockDim.y;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * bx + tx, threads = bx * by;
    const int rows = 2 * by, cols = 2 * bx;
    const size_t z = blockIdx.z;
    const float* az = a + z * m * k;
    const float* bz = b + z * k * n;
    const int row0 = blockIdx.y * rows, col0 = blockIdx.x * cols;
    float s[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
    float c[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
    for (int k0 = 0; k0 < k; k0 += BK) {
        const int depth = min(BK, k - k0);
        for (int e = tid; e < rows * depth; e += threads) {
            const int r = e / depth, kk = e % depth;
            As[r][kk] = (row0 + r < m) ? az[(size_t)(row0 + r) * k + k0 + kk] : 0.0f;
        }
        for (int e = tid; e < depth * cols; e += threads) {
            const int kk = e / cols, q = e % cols;
            Bs[kk][q] = (col0 + q < n) ? bz[(size_t)(k0 + kk) * n + col0 + q] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < depth; ++kk) {
            for (int i = 0; i < 2; ++i) {
                for (int j = 0; j < 2; ++j) {
                    const float y = As[ty + by * i][kk] * Bs[kk][tx + bx * j] - c[i][j];
                    const float t = s[i][j] + y;
                    c[i][j] = (t - s[i][j]) - y;
                    s[i][j] = t;
                }
            }
        }
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
            const int r = row0 + ty + by * i, col = col0 + tx + bx * j;
            if (r < m && col < n) out[z * m * n + (size_t)r * n + col] = s[i][j] - c[i][j];
        }
    }
}
