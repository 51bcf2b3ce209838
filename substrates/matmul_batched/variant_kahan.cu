/* mutagym
# 32 x 32 tiles (shrinking with m and n), K step 16, Kahan-compensated accumulation.
[[launch]]
kernel = "bmm_tiled_kahan"
grid = ["ceil_div(n, min(n, 32))", "ceil_div(m, min(m, 32))", "batch"]
block = ["min(n, 32)", "min(m, 32)"]
shared_bytes = 0
args = ["a", "b", "out", "batch", "m", "k", "n"]
*/
#define TILE 32
#define BK 16

extern "C" __global__ void bmm_tiled_kahan(const float* __restrict__ a,
                                           const float* __restrict__ b,
                                           float* __restrict__ out, int batch, int m, int k,
                                           int n) {
    __shared__ float As[TILE][BK + 1];
    __shared__ float Bs[BK][TILE];

    const int z = blockIdx.z;
    if (z >= batch) return;
    const size_t a_off = (size_t)z * m * k;
    const size_t b_off = (size_t)z * k * n;

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float sum = 0.0f;
    float comp = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < m && p < k) ? a[a_off + (size_t)row * k + p] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < k && col < n) ? b[b_off + (size_t)p * n + col] : 0.0f;
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

    if (row < m && col < n) {
        out[(size_t)z * m * n + (size_t)row * n + col] = sum;
    }
}
