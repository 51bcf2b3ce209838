/* mutagym
# One block computes a 16 x 16 tile of out: two producer warps, then eight consumer warps (256
# threads, one output element each).
[[launch]]
kernel = "matmul_two_producers"
grid = ["ceil_div(n, 16)", "ceil_div(n, 16)"]
block = [320]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#define TILE 16
#define PRODUCER_WARPS 2

// Warp-specialised SGEMM with two producer warps and two partial sums per output (even and odd k,
// added at the end). Warps below PRODUCER_WARPS only load, the others only multiply. In step
// t the producers fill buffer buf ^ 1 with K step t + 1 while the consumers read buffer buf; the
// one barrier per step hands the freshly filled buffer to the consumers and the drained one back
// to the producers.
extern "C" __global__ void matmul_two_producers(const float* __restrict__ a, const float* __restrict__ b,
                                                   float* __restrict__ out, int n) {
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];
    const int warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * TILE;
    const int col0 = blockIdx.x * TILE;
    const int tiles = (n + TILE - 1) / TILE;
    const int producers = PRODUCER_WARPS * 32;

    if (warp < PRODUCER_WARPS) {
        for (int e = (int)threadIdx.x; e < TILE * TILE; e += producers) {
            const int r = e / TILE, c = e % TILE;
            As[0][r][c] = (row0 + r < n && c < n) ? a[(size_t)(row0 + r) * n + c] : 0.0f;
            Bs[0][r][c] = (r < n && col0 + c < n) ? b[(size_t)r * n + col0 + c] : 0.0f;
        }
    }
    __syncthreads();

    const int c = threadIdx.x - producers;   // the consumer's index, valid for consumers only
    const int ty = c / TILE, tx = c % TILE;
    float acc = 0.0f, odd = 0.0f;   // partial sums of the even and the odd k
    for (int t = 0; t < tiles; ++t) {
        const int buf = t & 1;
        if (warp < PRODUCER_WARPS) {
            if (t + 1 < tiles) {
                const int k0 = (t + 1) * TILE;
                for (int e = (int)threadIdx.x; e < TILE * TILE; e += producers) {
                    const int r = e / TILE, cc = e % TILE;
                    As[buf ^ 1][r][cc] = (row0 + r < n && k0 + cc < n) ? a[(size_t)(row0 + r) * n + k0 + cc] : 0.0f;
                    Bs[buf ^ 1][r][cc] = (k0 + r < n && col0 + cc < n) ? b[(size_t)(k0 + r) * n + col0 + cc] : 0.0f;
                }
            }
        } else {
            for (int k = 0; k < TILE; k += 2) {
                acc += As[buf][ty][k] * Bs[buf][k][tx];
                odd += As[buf][ty][k + 1] * Bs[buf][k + 1][tx];
            }
        }
        __syncthreads();
    }
    if (warp >= PRODUCER_WARPS && row0 + ty < n && col0 + tx < n) {
        out[(size_t)(row0 + ty) * n + col0 + tx] = acc + odd;
    }
}
