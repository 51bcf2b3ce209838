/* mutagym
# Tensor cores: each warp computes 16 x 16 tiles of out with nvcuda::wmma (half operands, float
# accumulator), k stepped by 16. A block is 4 warps; each warp strides over the tiles, about two
# tiles per warp. Operand tiles are staged in shared memory, zero-padded past m, n and k, so every
# shape takes the same path; the result tile goes through shared memory to keep the edges.
[[launch]]
kernel = "hgemm_wmma_f32acc"
grid = ["ceil_div(ceil_div(m, 16) * ceil_div(n, 16), 8)"]
block = [128]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

#define WARPS 4

extern "C" __global__ void hgemm_wmma_f32acc(const __half* __restrict__ a,
                                             const __half* __restrict__ b,
                                             float* __restrict__ out, int m, int k, int n) {
    __shared__ __align__(32) __half As[WARPS][16][16];
    __shared__ __align__(32) __half Bs[WARPS][16][16];
    __shared__ __align__(32) float Cs[WARPS][16][16];

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int tiles_n = (n + 15) / 16;
    const int tiles = ((m + 15) / 16) * tiles_n;
    const __half zero = __float2half(0.0f);

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;

    for (int tile = blockIdx.x * WARPS + warp; tile < tiles; tile += gridDim.x * WARPS) {
        const int row0 = (tile / tiles_n) * 16;
        const int col0 = (tile % tiles_n) * 16;
        wmma::fill_fragment(acc, 0.0f);
        for (int k0 = 0; k0 < k; k0 += 16) {
            for (int e = lane; e < 256; e += 32) {
                const int r = e / 16, c = e % 16;
                As[warp][r][c] = (row0 + r < m && k0 + c < k) ? a[(size_t)(row0 + r) * k + k0 + c] : zero;
                Bs[warp][r][c] = (k0 + r < k && col0 + c < n) ? b[(size_t)(k0 + r) * n + col0 + c] : zero;
            }
            __syncwarp();
            wmma::load_matrix_sync(a_frag, &As[warp][0][0], 16);
            wmma::load_matrix_sync(b_frag, &Bs[warp][0][0], 16);
            wmma::mma_sync(acc, a_frag, b_frag, acc);
            __syncwarp();
        }
        wmma::store_matrix_sync(&Cs[warp][0][0], acc, 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
            const int r = e / 16, c = e % 16;
            if (row0 + r < m && col0 + c < n) {
                out[(size_t)(row0 + r) * n + col0 + c] = Cs[warp][r][c];
            }
        }
        __syncwarp();
    }
}
