/* mutagym
# One block computes a (blockDim.y x blockDim.x) tile of out, at most 16 x 16; the block shrinks
# with n so that tiny problems do not pay for 256 idle threads at every barrier.
[[launch]]
kernel = "matmul_tiled"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(n, min(n, 16))"]
block = ["min(n, 16)", "min(n, 16)"]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#define TILE 16   // largest block edge: rows of As, columns of Bs
#define BK 32     // depth of one K step staged in shared memory

// Shared-memory tiled SGEMM: each K step stages a TILE x BK panel of a and a BK x TILE panel of
// b (zero-padded past the matrix edge), synchronises, and accumulates in a register.
extern "C" __global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ out, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += BK) {
        // a panel: row `row`, columns k0 .. k0 + BK - 1, threads of a row share the BK loads
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int k = k0 + kk;
            As[ty][kk] = (row < n && k < n) ? a[(size_t)row * n + k] : 0.0f;
        }
        // b panel: rows k0 .. k0 + BK - 1, column `col`
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int k = k0 + kk;
            Bs[kk][tx] = (k < n && col < n) ? b[(size_t)k * n + col] : 0.0f;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < n && col < n) {
        out[(size_t)row * n + col] = acc;
    }
}
