/* mutagym
[[launch]]
kernel = "linear_tiles"
grid = ["ceil_div(out_features, min(out_features, 16))", "ceil_div(batch, min(batch, 16))"]
block = ["min(out_features, 16)", "min(batch, 16)"]
args = ["x", "weight", "bias", "y", "batch", "in_features", "out_features"]

[[launch]]
kernel = "sigmoid_row_sums"
grid = ["ceil_div(batch, 4)"]
block = [128]
args = ["y", "out", "batch", "out_features"]

[[scratch]]
name = "y"
dtype = "float32"
size = "batch * out_features"
*/
// Two launches through scratch. 1: a tiled GEMM (at most 16 x 16 threads, shrinking with the dims,
// 64-deep shared panels of x and weight, zero-padded) writes y = x . weight^T + bias in float32.
// 2: one warp per row sums the fast sigmoid __frcp_rn(1 + __expf(-y)) over the row's features
// (lane-strided, then an xor-shuffle butterfly). __expf's error grows with |y| but only where
// the sigmoid is within e^-|y| of 0 or 1, and 1 + __expf(-y) = inf for y < -88 gives 0, the
// right limit.
#define T 16
#define BK 64

extern "C" __global__ void linear_tiles(const float* __restrict__ x, const float* __restrict__ weight,
                                        const float* __restrict__ bias, float* __restrict__ y, int batch,
                                        int in_features, int out_features) {
    __shared__ float Xs[T][BK];
    __shared__ float Ws[T][BK];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * blockDim.y + ty;     // row of x
    const int j = blockIdx.x * blockDim.x + tx;     // output feature
    float acc = 0.0f;
    for (int k0 = 0; k0 < in_features; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x)
            Xs[ty][kk] = (i < batch && k0 + kk < in_features) ? x[(size_t)i * in_features + k0 + kk] : 0.0f;
        // Ws[r][kk] holds weight[blockIdx.x * blockDim.x + r, k0 + kk]; rows r >= blockDim.y are staged
        // by the loop over r (the block may be wider than tall).
        for (int r = ty; r < blockDim.x; r += blockDim.y) {
            const int wr = blockIdx.x * blockDim.x + r;
            for (int kk = tx; kk < BK; kk += blockDim.x)
                Ws[r][kk] = (wr < out_features && k0 + kk < in_features) ? weight[(size_t)wr * in_features + k0 + kk] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) acc += Xs[ty][kk] * Ws[tx][kk];
        __syncthreads();
    }
    if (i < batch && j < out_features) y[(size_t)i * out_features + j] = acc + bias[j];
}

extern "C" __global__ void sigmoid_row_sums(const float* __restrict__ y, float* __restrict__ out, int batch,
                                            int out_features) {
    const int lane = threadIdx.x & 31;
    const int i = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (i >= batch) return;   // whole warps leave
    const float* yr = y + (size_t)i * out_features;
    float s = 0.0f;
    for (int j = lane; j < out_features; j += 32) s += __frcp_rn(1.0f + __expf(-yr[j]));
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if (lane == 0) out[i] = s;
}
