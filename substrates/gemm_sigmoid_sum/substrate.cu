/* mutagym
# Launch 1: tiled GEMM (tiles of at most 16 x 16, shrinking with the dims); the epilogue applies
# bias and sigmoid, then each tile row is tree-reduced across its columns in shared memory and
# written as one partial per (row, column tile). Launch 2: one thread per row adds its partials.
[[launch]]
kernel = "gemm_sigmoid_rowpartial"
grid = ["ceil_div(out_features, min(out_features, 16))", "ceil_div(batch, min(batch, 16))"]
block = ["min(out_features, 16)", "min(batch, 16)"]
shared_bytes = 0
args = ["x", "weight", "bias", "partial", "batch", "in_features", "out_features"]

[[launch]]
kernel = "sum_row_partials"
grid = ["min(ceil_div(batch, 128), 1024)"]
block = [128]
shared_bytes = 0
args = ["partial", "out", "batch", "out_features"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "batch * ceil_div(out_features, min(out_features, 16))"
*/
#define TILE 16   // a power of two: the column tree below pads a narrower block to it
#define BK 32

extern "C" __global__ void gemm_sigmoid_rowpartial(const float* __restrict__ x,
                                                   const float* __restrict__ weight,
                                                   const float* __restrict__ bias,
                                                   float* __restrict__ partial, int batch,
                                                   int in_features, int out_features) {
    __shared__ float Xs[TILE][BK];
    __shared__ float Ws[BK][TILE + 1];   // Ws[kk][c] = weight[col0 + c, k0 + kk]
    __shared__ float red[TILE][TILE];

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

    // epilogue: columns past out_features contribute nothing to the row sum
    float s = 0.0f;
    if (col < out_features) {
        s = 1.0f / (1.0f + expf(-(acc + bias[col])));
    }
    red[ty][tx] = s;
    __syncthreads();
    for (int stride = TILE / 2; stride > 0; stride >>= 1) {
        if (tx < stride && tx + stride < blockDim.x) {
            red[ty][tx] += red[ty][tx + stride];
        }
        __syncthreads();
    }
    if (tx == 0 && row < batch) {
        partial[(size_t)row * gridDim.x + blockIdx.x] = red[ty][0];
    }
}

extern "C" __global__ void sum_row_partials(const float* __restrict__ partial,
                                            float* __restrict__ out, int batch,
                                            int out_features) {
    // the number of column tiles of launch 1: ceil_div(out_features, min(out_features, TILE))
    const int tile = min(out_features, TILE);
    const int ntiles = (out_features + tile - 1) / tile;
    for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < batch;
         row += gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int t = 0; t < ntiles; ++t) {
            s += partial[(size_t)row * ntiles + t];
        }
        out[row] = s;
    }
}
