/* mutagym
# 32 x 32 tiles (shrinking with batch and out_features), K step 16 loaded by flat cooperative
# indexing, Kahan-compensated accumulation; bias then ReLU at the store.
[[launch]]
kernel = "linear_bias_relu_kahan"
grid = ["ceil_div(out_features, min(out_features, 32))", "ceil_div(batch, min(batch, 32))"]
block = ["min(out_features, 32)", "min(batch, 32)"]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "batch", "in_features", "out_features"]
*/
#define TILE 32
#define BK 16

extern "C" __global__ void linear_bias_relu_kahan(const float* __restrict__ x,
                                                  const float* __restrict__ weight,
                                                  const float* __restrict__ bias,
                                                  float* __restrict__ out, int batch,
                                                  int in_features, int out_features) {
    __shared__ float Xs[TILE][BK + 1];
    __shared__ float Ws[TILE][BK + 1];   // Ws[c][kk] = weight[col0 + c, k0 + kk]

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * blockDim.x + tx;
    const int nthreads = blockDim.x * blockDim.y;
    const int row0 = blockIdx.y * blockDim.y;
    const int col0 = blockIdx.x * blockDim.x;

    float sum = 0.0f;
    float comp = 0.0f;
    for (int k0 = 0; k0 < in_features; k0 += BK) {
        for (int e = tid; e < (int)blockDim.y * BK; e += nthreads) {
            const int r = e / BK;
            const int kk = e % BK;
            const int p = k0 + kk;
            Xs[r][kk] = (row0 + r < batch && p < in_features)
                            ? x[(size_t)(row0 + r) * in_features + p]
                            : 0.0f;
        }
        for (int e = tid; e < (int)blockDim.x * BK; e += nthreads) {
            const int c = e / BK;
            const int kk = e % BK;
            const int p = k0 + kk;
            Ws[c][kk] = (col0 + c < out_features && p < in_features)
                            ? weight[(size_t)(col0 + c) * in_features + p]
                            : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            const float y = Xs[ty][kk] * Ws[tx][kk] - comp;
            const float t = sum + y;
            comp = (t - sum) - y;
            sum = t;
        }
        __syncthreads();
    }

    const int row = row0 + ty;
    const int col = col0 + tx;
    if (row < batch && col < out_features) {
        out[(size_t)row * out_features + col] = fmaxf(sum + bias[col], 0.0f);
    }
}
