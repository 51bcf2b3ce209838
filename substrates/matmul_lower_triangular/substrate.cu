/* mutagym
# One block per (blockDim.y x blockDim.x) output tile, at most 16 x 16. Tiles strictly above the
# diagonal only write zeros; the others run K over [first column of the tile, last row + 1).
[[launch]]
kernel = "trilmm_tiled"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(n, min(n, 16))"]
block = ["min(n, 16)", "min(n, 16)"]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#define TILE 16
#define BK 32

extern "C" __global__ void trilmm_tiled(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ out, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row0 = blockIdx.y * blockDim.y;
    const int col0 = blockIdx.x * blockDim.x;
    const int row = row0 + ty;
    const int col = col0 + tx;

    // whole tile above the diagonal: the same decision for every thread, taken before any barrier
    if (col0 > row0 + (int)blockDim.y - 1) {
        if (row < n && col < n) {
            out[(size_t)row * n + col] = 0.0f;
        }
        return;
    }

    // a[i, p] is zero for p > i and b[p, j] is zero for p < j: only p in [col0, kend) contributes
    const int kend = min(n, row0 + (int)blockDim.y);
    float acc = 0.0f;
    for (int k0 = col0; k0 < kend; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < n && p < kend && p <= row) ? a[(size_t)row * n + p] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < kend && col < n && p >= col) ? b[(size_t)p * n + col] : 0.0f;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < n && col < n) {
        out[(size_t)row * n + col] = (col <= row) ? acc : 0.0f;
    }
}
