/* mutagym
# One block computes a 32 x 32 tile of out with 256 threads, four output elements each.
[[launch]]
kernel = "matmul_cp_async_single"
grid = ["ceil_div(n, 32)", "ceil_div(n, 32)"]
block = [32, 8]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#include <cuda_pipeline.h>
#define TILE 32
#define ROWS 4   // output rows per thread: TILE / blockDim.y

// Single-buffered tiled SGEMM with asynchronous copies and a wider tile: each K step's copies are
// committed and waited for at once (wait_prior(0)), and each thread accumulates four outputs of
// one column in K order, two partial sums per output (even and odd k) added at the end.
extern "C" __global__ void matmul_cp_async_single(const float* __restrict__ a, const float* __restrict__ b,
                                                  float* __restrict__ out, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int col = blockIdx.x * TILE + threadIdx.x;
    float even[ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
    float odd[ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < n; k0 += TILE) {
        for (int i = 0; i < ROWS; ++i) {
            const int r = threadIdx.y + i * blockDim.y;
            const int row = blockIdx.y * TILE + r;
            const int ka = k0 + threadIdx.x;
            const int kb = k0 + r;
            if (row < n && ka < n) {
                __pipeline_memcpy_async(&As[r][threadIdx.x], &a[(size_t)row * n + ka], sizeof(float));
            } else {
                As[r][threadIdx.x] = 0.0f;
            }
            if (kb < n && col < n) {
                __pipeline_memcpy_async(&Bs[r][threadIdx.x], &b[(size_t)kb * n + col], sizeof(float));
            } else {
                Bs[r][threadIdx.x] = 0.0f;
            }
        }
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncthreads();
        for (int k = 0; k < TILE; k += 2) {
            for (int i = 0; i < ROWS; ++i) {
                const int r = threadIdx.y + i * blockDim.y;
                even[i] += As[r][k] * Bs[k][threadIdx.x];
                odd[i] += As[r][k + 1] * Bs[k + 1][threadIdx.x];
            }
        }
        __syncthreads();
    }
    for (int i = 0; i < ROWS; ++i) {
        const int row = blockIdx.y * TILE + threadIdx.y + i * blockDim.y;
        if (row < n && col < n) {
            out[(size_t)row * n + col] = even[i] + odd[i];
        }
    }
}
