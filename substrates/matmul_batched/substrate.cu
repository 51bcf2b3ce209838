/* mutagym
# blockIdx.z is the batch index; each block computes a (blockDim.y x blockDim.x) tile of one
# out[z], at most 16 x 16, shrinking with m and n.
[[launch]]
kernel = "bmm_tiled"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))", "batch"]
block = ["min(n, 16)", "min(m, 16)"]
shared_bytes = 0
args = ["a", "b", "out", "batch", "m", "k", "n"]
*/
#define TILE 16
#define BK 32

extern "C" __global__ void bmm_tiled(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ out, int batch, int m, int k, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];

    const int z = blockIdx.z;
    if (z >= batch) return;   // whole block leaves together, before any barrier
    const float* __restrict__ az = a + (size_t)z * m * k;
    const float* __restrict__ bz = b + (size_t)z * k * n;

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < m && p < k) ? az[(size_t)row * k + p] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < k && col < n) ? bz[(size_t)p * n + col] : 0.0f;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < m && col < n) {
        out[(size_t)z * m * n + (size_t)row * n + col] = acc;
    }
}
