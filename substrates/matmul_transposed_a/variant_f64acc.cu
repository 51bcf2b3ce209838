/* mutagym
# 32 x 32 tiles (shrinking with m and n), K step 8, products and sums in double.
[[launch]]
kernel = "matmul_at_tiled_f64acc"
grid = ["ceil_div(n, min(n, 32))", "ceil_div(m, min(m, 32))"]
block = ["min(n, 32)", "min(m, 32)"]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#define TILE 32
#define BK 8

extern "C" __global__ void matmul_at_tiled_f64acc(const float* __restrict__ a,
                                                  const float* __restrict__ b,
                                                  float* __restrict__ out, int m, int k, int n) {
    __shared__ float AsT[BK][TILE];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * blockDim.x + tx;
    const int nthreads = blockDim.x * blockDim.y;
    const int row0 = blockIdx.y * blockDim.y;
    const int col0 = blockIdx.x * blockDim.x;
    const int rows = blockDim.y;   // tile height
    const int cols = blockDim.x;   // tile width

    double acc = 0.0;
    for (int k0 = 0; k0 < k; k0 += BK) {
        // flat cooperative loads over the BK x rows and BK x cols panels
        for (int e = tid; e < BK * rows; e += nthreads) {
            const int kk = e / rows;
            const int r = e % rows;
            const int p = k0 + kk;
            AsT[kk][r] = (p < k && row0 + r < m) ? a[(size_t)p * m + row0 + r] : 0.0f;
        }
        for (int e = tid; e < BK * cols; e += nthreads) {
            const int kk = e / cols;
            const int c = e % cols;
            const int p = k0 + kk;
            Bs[kk][c] = (p < k && col0 + c < n) ? b[(size_t)p * n + col0 + c] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            acc += (double)AsT[kk][ty] * (double)Bs[kk][tx];
        }
        __syncthreads();
    }

    const int row = row0 + ty;
    const int col = col0 + tx;
    if (row < m && col < n) {
        out[(size_t)row * n + col] = (float)acc;
    }
}
