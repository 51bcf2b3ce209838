/* mutagym
# Split-K: blockIdx.z owns one slice of in_features (up to 8 slices of at least 64) and writes a
# partial tile to scratch; the second launch adds the slices pairwise and applies the epilogue.
[[launch]]
kernel = "linear_splitk_partial"
grid = ["ceil_div(out_features, min(out_features, 16))", "ceil_div(batch, min(batch, 16))", "min(ceil_div(in_features, 64), 8)"]
block = ["min(out_features, 16)", "min(batch, 16)"]
shared_bytes = 0
args = ["x", "weight", "partial", "batch", "in_features", "out_features"]

[[launch]]
kernel = "splitk_scale_residual_epilogue"
grid = ["min(ceil_div(batch * out_features, 256), 1024)"]
block = [256]
shared_bytes = 0
args = ["partial", "bias", "residual", "out", "batch", "in_features", "out_features", "scale"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "min(ceil_div(in_features, 64), 8) * batch * out_features"
*/
#define TILE 16
#define BK 16
#define SLICE_MIN 64   // slices = min(ceil_div(in_features, SLICE_MIN), MAX_SLICES), as launched
#define MAX_SLICES 8

extern "C" __global__ void linear_splitk_partial(const float* __restrict__ x,
                                                 const float* __restrict__ weight,
                                                 float* __restrict__ partial, int batch,
                                                 int in_features, int out_features) {
    __shared__ float Xs[TILE][BK];
    __shared__ float Ws[TILE][BK + 1];   // Ws[c][kk] = weight[col0 + c, k0 + kk]

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row0 = blockIdx.y * blockDim.y;
    const int col0 = blockIdx.x * blockDim.x;
    const int row = row0 + ty;
    const int col = col0 + tx;

    const int slices = gridDim.z;
    const int chunk = ((in_features + slices - 1) / slices + BK - 1) / BK * BK;
    const int kbeg = blockIdx.z * chunk;
    const int kend = min(in_features, kbeg + chunk);

    float acc = 0.0f;
    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            Xs[ty][kk] = (row < batch && p < kend) ? x[(size_t)row * in_features + p] : 0.0f;
        }
        for (int c = ty; c < blockDim.x; c += blockDim.y) {
            for (int kk = tx; kk < BK; kk += blockDim.x) {
                const int p = k0 + kk;
                Ws[c][kk] = (col0 + c < out_features && p < kend)
                                ? weight[(size_t)(col0 + c) * in_features + p]
                                : 0.0f;
            }
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            acc += Xs[ty][kk] * Ws[tx][kk];
        }
        __syncthreads();
    }

    if (row < batch && col < out_features) {
        partial[(size_t)blockIdx.z * batch * out_features + (size_t)row * out_features + col] = acc;
    }
}

extern "C" __global__ void splitk_scale_residual_epilogue(const float* __restrict__ partial,
                                                          const float* __restrict__ bias,
                                                          const float* __restrict__ residual,
                                                          float* __restrict__ out, int batch,
                                                          int in_features, int out_features,
                                                          float scale) {
    const int slices = min((in_features + SLICE_MIN - 1) / SLICE_MIN, MAX_SLICES);
    const size_t total = (size_t)batch * out_features;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        float v[MAX_SLICES];
        for (int z = 0; z < MAX_SLICES; ++z) {
            v[z] = z < slices ? partial[(size_t)z * total + i] : 0.0f;
        }
        for (int width = MAX_SLICES / 2; width > 0; width >>= 1) {
            for (int z = 0; z < width; ++z) {
                v[z] = v[2 * z] + v[2 * z + 1];
            }
        }
        const int col = (int)(i % out_features);
        out[i] = (v[0] + bias[col]) * scale + residual[i];
    }
}
