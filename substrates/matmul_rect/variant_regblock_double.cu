/* mutagym
# Register blocking: a block of up to 16 x 16 threads computes a tile twice as large in each
# direction (each thread 2 x 2 outputs, strided by the block edge). K step 16. Products and sums
# are carried in double and rounded to float once at the store.
[[launch]]
kernel = "matmul_rect_regblock_f64acc"
grid = ["ceil_div(n, 2 * min(ceil_div(n, 2), 16))", "ceil_div(m, 2 * min(ceil_div(m, 2), 16))"]
block = ["min(ceil_div(n, 2), 16)", "min(ceil_div(m, 2), 16)"]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#define TILE 16   // largest block edge; a block covers 2 * blockDim outputs per direction
#define BK 16

extern "C" __global__ void matmul_rect_regblock_f64acc(const float* __restrict__ a,
                                                      const float* __restrict__ b,
                                                      float* __restrict__ out, int m, int k,
                                                      int n) {
    __shared__ float As[2 * TILE][BK];
    __shared__ float Bs[BK][2 * TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int bw = blockDim.x;
    const int bh = blockDim.y;
    const int row0 = blockIdx.y * 2 * bh;   // first row of this block's tile
    const int col0 = blockIdx.x * 2 * bw;   // first column of this block's tile

    double acc[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
    for (int k0 = 0; k0 < k; k0 += BK) {
        for (int r = ty; r < 2 * bh; r += bh) {
            for (int kk = tx; kk < BK; kk += bw) {
                const int row = row0 + r;
                const int p = k0 + kk;
                As[r][kk] = (row < m && p < k) ? a[(size_t)row * k + p] : 0.0f;
            }
        }
        for (int kk = ty; kk < BK; kk += bh) {
            for (int c = tx; c < 2 * bw; c += bw) {
                const int col = col0 + c;
                const int p = k0 + kk;
                Bs[kk][c] = (p < k && col < n) ? b[(size_t)p * n + col] : 0.0f;
            }
        }
        __syncthreads();

        for (int kk = 0; kk < BK; ++kk) {
            const double a0 = As[ty][kk];
            const double a1 = As[ty + bh][kk];
            const double b0 = Bs[kk][tx];
            const double b1 = Bs[kk][tx + bw];
            acc[0][0] += a0 * b0;
            acc[0][1] += a0 * b1;
            acc[1][0] += a1 * b0;
            acc[1][1] += a1 * b1;
        }
        __syncthreads();
    }

    for (int i = 0; i < 2; ++i) {
        const int row = row0 + ty + i * bh;
        for (int j = 0; j < 2; ++j) {
            const int col = col0 + tx + j * bw;
            if (row < m && col < n) {
                out[(size_t)row * n + col] = (float)acc[i][j];
            }
        }
    }
}
