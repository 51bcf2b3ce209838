/* mutagym
# One block computes a (blockDim.y x blockDim.x) tile of out (rows = batch, columns =
# out_features), at most 16 x 16, shrinking with the dims; the epilogue is fused.
[[launch]]
kernel = "linear_scale_residual_tiled"
grid = ["ceil_div(out_features, min(out_features, 16))", "ceil_div(batch, min(batch, 16))"]
block = ["min(out_features, 16)", "min(batch, 16)"]
shared_bytes = 0
args = ["x", "weight", "bias", "residual", "out", "batch", "in_features", "out_features", "scale"]
*/
#define TILE 16
#define BK 32

extern "C" __global__ void linear_scale_residual_tiled(const float* __restrict__ x,
                                                       const float* __restrict__ weight,
                                                       const float* __restrict__ bias,
                                                       const float* __restrict__ residual,
                                                       float* __restrict__ out, int batch,
                                                       int in_features, int out_features,
                                                       float scale) {
    __shared__ float Xs[TILE][BK];
    __shared__ float Ws[BK][TILE + 1];   // Ws[kk][c] = weight[col0 + c, k0 + kk]

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row0 = blockIdx.y * blockDim.y;
    const int col0 = blockIdx.x * blockDim.x;
    const int row = row0 + ty;
    const int col = col0 + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < in_features; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            Xs[ty][kk] = (row < batch && p < in_features) ? x[(size_t)row * in_features + p] : 0.0f;
        }
        for (int c = ty; c < blockDim.x; c += blockDim.y) {
            for (int kk = tx; kk < BK; kk += blockDim.x) {
                const int p = k0 + kk;
                Ws[kk][c] = (col0 + c < out_features && p < in_features)
                                ? weight[(size_t)(col0 + c) * in_features + p]
                                : 0.0f;
            }
        }
        __syncthreads();

#pragma unroll 8
        for (int kk = 0; kk < BK; ++kk) {
            acc += Xs[ty][kk] * Ws[kk][tx];
        }
        __syncthreads();
    }

    if (row < batch && col < out_features) {
        const size_t o = (size_t)row * out_features + col;
        out[o] = (acc + bias[col]) * scale + residual[o];
    }
}
