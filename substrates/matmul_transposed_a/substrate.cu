/* mutagym
# One block computes a (blockDim.y x blockDim.x) tile of out, at most 16 x 16, shrinking with
# m and n. Both panels are read along their contiguous dimension.
[[launch]]
kernel = "matmul_at_tiled"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))"]
block = ["min(n, 16)", "min(m, 16)"]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#define TILE 16
#define BK 32

// The a panel is staged as AsT[kk][r] = a[k0 + kk, row0 + r], i.e. already transposed: threads
// with consecutive threadIdx.x read consecutive addresses of a row of a.
extern "C" __global__ void matmul_at_tiled(const float* __restrict__ a,
                                           const float* __restrict__ b,
                                           float* __restrict__ out, int m, int k, int n) {
    __shared__ float AsT[BK][TILE + 1];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row0 = blockIdx.y * blockDim.y;
    const int col0 = blockIdx.x * blockDim.x;
    const int row = row0 + ty;
    const int col = col0 + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            for (int r = tx; r < blockDim.y; r += blockDim.x) {
                AsT[kk][r] = (p < k && row0 + r < m) ? a[(size_t)p * m + row0 + r] : 0.0f;
            }
            Bs[kk][tx] = (p < k && col < n) ? b[(size_t)p * n + col] : 0.0f;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += AsT[kk][ty] * Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < m && col < n) {
        out[(size_t)row * n + col] = acc;
    }
}
