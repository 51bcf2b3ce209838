/* mutagym
# One block computes a 16 x 16 tile of out with 256 threads, one output element each.
[[launch]]
kernel = "matmul_cp_async"
grid = ["ceil_div(n, 16)", "ceil_div(n, 16)"]
block = [16, 16]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#include <cuda_pipeline.h>
#define TILE 16

// Stages K step `t` of a and b into buffer `buf`: one 4-byte asynchronous copy per thread and
// matrix, a plain zero past the matrix edge.
__device__ void load_tile(float (*As)[TILE][TILE], float (*Bs)[TILE][TILE], const float* a,
                          const float* b, int n, int row, int col, int t, int buf) {
    const int ka = t * TILE + threadIdx.x;
    const int kb = t * TILE + threadIdx.y;
    if (row < n && ka < n) {
        __pipeline_memcpy_async(&As[buf][threadIdx.y][threadIdx.x], &a[(size_t)row * n + ka], sizeof(float));
    } else {
        As[buf][threadIdx.y][threadIdx.x] = 0.0f;
    }
    if (kb < n && col < n) {
        __pipeline_memcpy_async(&Bs[buf][threadIdx.y][threadIdx.x], &b[(size_t)kb * n + col], sizeof(float));
    } else {
        Bs[buf][threadIdx.y][threadIdx.x] = 0.0f;
    }
}

// Double-buffered tiled SGEMM: while the block multiplies the tiles of K step t (buffer buf), the
// copies of step t + 1 fly into the other buffer. wait_prior(1) leaves only that newest group
// pending; the first barrier publishes every thread's landed copies, the second keeps a buffer
// from being refilled while another thread still reads it.
extern "C" __global__ void matmul_cp_async(const float* __restrict__ a, const float* __restrict__ b,
                                           float* __restrict__ out, int n) {
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int tiles = (n + TILE - 1) / TILE;

    load_tile(As, Bs, a, b, n, row, col, 0, 0);
    __pipeline_commit();
    float acc = 0.0f;
    for (int t = 0; t < tiles; ++t) {
        const int buf = t & 1;
        if (t + 1 < tiles) {
            load_tile(As, Bs, a, b, n, row, col, t + 1, buf ^ 1);
        }
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            acc += As[buf][threadIdx.y][k] * Bs[buf][k][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < n && col < n) {
        out[(size_t)row * n + col] = acc;
    }
}
