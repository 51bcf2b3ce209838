/* mutagym
# One block computes a (blockDim.y x blockDim.x) tile of out, at most 16 x 16; the block shrinks
# to min(m, 16) x min(n, 16) so that a skinny product with a long k stays cheap.
[[launch]]
kernel = "matmul_rect_tiled"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))"]
block = ["min(n, 16)", "min(m, 16)"]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#define TILE 16   // largest block edge
#define BK 32     // depth of one K step staged in shared memory

// Shared-memory tiled SGEMM: each K step stages a TILE x BK panel of a and a BK x TILE panel of
// b, zero-padded past the matrix edges, then every thread accumulates one output in a register.
extern "C" __global__ void matmul_rect_tiled(const float* __restrict__ a,
                                             const float* __restrict__ b,
                                             float* __restrict__ out, int m, int k, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < m && p < k) ? a[(size_t)row * k + p] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < k && col < n) ? b[(size_t)p * n + col] : 0.0f;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < m && col < n) {
        out[(size_t)row * n + col] = acc;
    }
}
