/* mutagym
# 32 x 32 tiles (the block shrinks with n), K step 32, Kahan-compensated accumulation.
[[launch]]
kernel = "matmul_tiled_kahan"
grid = ["ceil_div(n, min(n, 32))", "ceil_div(n, min(n, 32))"]
block = ["min(n, 32)", "min(n, 32)"]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#define TILE 32
#define BK 32

extern "C" __global__ void matmul_tiled_kahan(const float* __restrict__ a,
                                              const float* __restrict__ b,
                                              float* __restrict__ out, int n) {
    __shared__ float As[TILE][BK + 1];   // +1 column: no bank conflicts on the row-wise reads
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float sum = 0.0f;
    float comp = 0.0f;   // running compensation: the low-order bits lost by `sum`
    for (int k0 = 0; k0 < n; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int k = k0 + kk;
            As[ty][kk] = (row < n && k < n) ? a[(size_t)row * n + k] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int k = k0 + kk;
            Bs[kk][tx] = (k < n && col < n) ? b[(size_t)k * n + col] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            const float y = As[ty][kk] * Bs[kk][tx] - comp;
            const float t = sum + y;
            comp = (t - sum) - y;
            sum = t;
        }
        __syncthreads();
    }

    if (row < n && col < n) {
        out[(size_t)row * n + col] = sum;
    }
}
