/* mutagym
# Launch 1: tiled GEMM + bias into the scratch y (batch x out_features), tiles of at most
# 16 x 16 shrinking with the dims. Launch 2: one block of 128 threads per row (grid-stride over
# rows), two-pass LayerNorm with shared-memory tree reductions.
[[launch]]
kernel = "linear_bias_tiled"
grid = ["ceil_div(out_features, min(out_features, 16))", "ceil_div(batch, min(batch, 16))"]
block = ["min(out_features, 16)", "min(batch, 16)"]
shared_bytes = 0
args = ["x", "weight", "bias", "y", "batch", "in_features", "out_features"]

[[launch]]
kernel = "layernorm_rows"
grid = ["min(batch, 1024)"]
block = [128]
shared_bytes = 0
args = ["y", "gamma", "beta", "out", "batch", "out_features", "eps"]

[[scratch]]
name = "y"
dtype = "float32"
size = "batch * out_features"
*/
#define TILE 16
#define BK 32
#define LN_BLOCK 128   // must equal the second launch's block size (a power of two)

extern "C" __global__ void linear_bias_tiled(const float* __restrict__ x,
                                             const float* __restrict__ weight,
                                             const float* __restrict__ bias,
                                             float* __restrict__ y, int batch, int in_features,
                                             int out_features) {
    __shared__ float Xs[TILE][BK];
    __shared__ float Ws[BK][TILE + 1];

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
        y[(size_t)row * out_features + col] = acc + bias[col];
    }
}

// Tree-reduce red[0 .. LN_BLOCK) into red[0]; every thread must call it.
__device__ __forceinline__ void block_sum(float* red) {
    for (int stride = LN_BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            red[threadIdx.x] += red[threadIdx.x + stride];
        }
        __syncthreads();
    }
}

extern "C" __global__ void layernorm_rows(const float* __restrict__ y,
                                          const float* __restrict__ gamma,
                                          const float* __restrict__ beta,
                                          float* __restrict__ out, int batch, int out_features,
                                          float eps) {
    __shared__ float red[LN_BLOCK];
    const int tid = threadIdx.x;
    const float inv_n = 1.0f / (float)out_features;

    for (int row = blockIdx.x; row < batch; row += gridDim.x) {
        const float* __restrict__ yr = y + (size_t)row * out_features;

        // pass 1: mean
        float s = 0.0f;
        for (int j = tid; j < out_features; j += LN_BLOCK) {
            s += yr[j];
        }
        red[tid] = s;
        __syncthreads();
        block_sum(red);
        const float mean = red[0] * inv_n;
        __syncthreads();   // red[0] is read by all before pass 2 overwrites it

        // pass 2: biased variance about the mean
        float v = 0.0f;
        for (int j = tid; j < out_features; j += LN_BLOCK) {
            const float d = yr[j] - mean;
            v += d * d;
        }
        red[tid] = v;
        __syncthreads();
        block_sum(red);
        const float rstd = rsqrtf(red[0] * inv_n + eps);

        float* __restrict__ orow = out + (size_t)row * out_features;
        for (int j = tid; j < out_features; j += LN_BLOCK) {
            orow[j] = (yr[j] - mean) * rstd * gamma[j] + beta[j];
        }
        __syncthreads();   // red[0] is read by all before the next row overwrites red
    }
}
