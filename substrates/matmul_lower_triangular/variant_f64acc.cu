/* mutagym
# 32 x 32 tiles (shrinking with n), K step 16, double accumulation. Every tile runs the same
# K loop; steps whose K range lies wholly outside [col0, row0 + tile) are skipped per step.
[[launch]]
kernel = "trilmm_tiled_f64acc"
grid = ["ceil_div(n, min(n, 32))", "ceil_div(n, min(n, 32))"]
block = ["min(n, 32)", "min(n, 32)"]
shared_bytes = 0
args = ["a", "b", "out", "n"]
*/
#define TILE 32
#define BK 16

extern "C" __global__ void trilmm_tiled_f64acc(const float* __restrict__ a,
                                               const float* __restrict__ b,
                                               float* __restrict__ out, int n) {
    __shared__ float As[TILE][BK + 1];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tile = blockDim.x;   // square blocks
    const int row0 = blockIdx.y * tile;
    const int col0 = blockIdx.x * tile;
    const int row = row0 + ty;
    const int col = col0 + tx;
    const int plo = col0;                    // smallest p that can contribute to this tile
    const int phi = min(n, row0 + tile);     // one past the largest

    double acc = 0.0;
    for (int k0 = 0; k0 < n; k0 += BK) {
        if (k0 + BK <= plo || k0 >= phi) {
            continue;   // uniform across the block: no thread reaches the barriers below
        }
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < n && p <= row) ? a[(size_t)row * n + p] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < n && col < n && p >= col) ? b[(size_t)p * n + col] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            acc += (double)As[ty][kk] * (double)Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < n && col < n) {
        out[(size_t)row * n + col] = (col <= row) ? (float)acc : 0.0f;
    }
}
