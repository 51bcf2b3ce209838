/* mutagym
# One block computes a (blockDim.y x blockDim.x) tile of out, at most 16 x 16, shrinking with
# m and n. Panels are staged in shared memory as float16; products accumulate in float32,
# which is also the output type.
[[launch]]
kernel = "hgemm_tiled_f32acc"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))"]
block = ["min(n, 16)", "min(m, 16)"]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#include <cuda_fp16.h>

#define TILE 16
#define BK 32

extern "C" __global__ void hgemm_tiled_f32acc(const __half* __restrict__ a,
                                              const __half* __restrict__ b,
                                              float* __restrict__ out, int m, int k, int n) {
    __shared__ __half As[TILE][BK];
    __shared__ __half Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;
    const __half zero = __float2half(0.0f);

    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < m && p < k) ? a[(size_t)row * k + p] : zero;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < k && col < n) ? b[(size_t)p * n + col] : zero;
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += __half2float(As[ty][kk]) * __half2float(Bs[kk][tx]);
        }
        __syncthreads();
    }

    if (row < m && col < n) {
        out[(size_t)row * n + col] = acc;
    }
}
