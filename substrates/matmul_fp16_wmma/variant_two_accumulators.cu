/* mutagym
# One warp per block and per 16 x 16 tile of out. Even and odd 16-wide k steps go to two float
# accumulators that are added at the end (another summation order than one accumulator). The
# operands of both steps are staged in shared memory, zero-padded past m, n and k.
[[launch]]
kernel = "hgemm_wmma_two_acc"
grid = ["ceil_div(n, 16)", "ceil_div(m, 16)"]
block = [32]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#include <cuda_fp16.h>
#include <mma.h>

extern "C" __global__ void hgemm_wmma_two_acc(const __half* __restrict__ a,
                                              const __half* __restrict__ b,
                                              float* __restrict__ out, int m, int k, int n) {
    __shared__ __align__(32) __half As[2][16][16];
    __shared__ __align__(32) __half Bs[2][16][16];
    __shared__ __align__(32) float Cs[16][16];

    const int lane = threadIdx.x;
    const int row0 = blockIdx.y * 16;
    const int col0 = blockIdx.x * 16;

    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa[2];
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::row_major> fb[2];
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> even, odd;
    nvcuda::wmma::fill_fragment(even, 0.0f);
    nvcuda::wmma::fill_fragment(odd, 0.0f);

    for (int k0 = 0; k0 < k; k0 += 32) {
        for (int e = lane; e < 512; e += 32) {
            const int s = e / 256, r = (e / 16) % 16, c = e % 16, p = k0 + 16 * s;
            As[s][r][c] = (row0 + r < m && p + c < k) ? a[(size_t)(row0 + r) * k + p + c] : __float2half(0.0f);
            Bs[s][r][c] = (p + r < k && col0 + c < n) ? b[(size_t)(p + r) * n + col0 + c] : __float2half(0.0f);
        }
        __syncwarp();
        for (int s = 0; s < 2; ++s) {
            nvcuda::wmma::load_matrix_sync(fa[s], &As[s][0][0], 16);
            nvcuda::wmma::load_matrix_sync(fb[s], &Bs[s][0][0], 16);
        }
        nvcuda::wmma::mma_sync(even, fa[0], fb[0], even);
        nvcuda::wmma::mma_sync(odd, fa[1], fb[1], odd);
        __syncwarp();
    }
    for (int i = 0; i < even.num_elements; ++i) even.x[i] += odd.x[i];
    nvcuda::wmma::store_matrix_sync(&Cs[0][0], even, 16, nvcuda::wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        const int r = e / 16, c = e % 16;
        if (row0 + r < m && col0 + c < n) out[(size_t)(row0 + r) * n + col0 + c] = Cs[r][c];
    }
}
