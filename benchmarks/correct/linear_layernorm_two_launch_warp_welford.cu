/* mutagym
[[launch]]
kernel = "linear_regtile"
grid = ["ceil_div(out_features, 2 * min(ceil_div(out_features, 2), 16))", "ceil_div(batch, 2 * min(ceil_div(batch, 2), 16))"]
block = ["min(ceil_div(out_features, 2), 16)", "min(ceil_div(batch, 2), 16)"]
args = ["x", "weight", "bias", "y", "batch", "in_features", "out_features"]

[[launch]]
kernel = "layernorm_warp_welford"
grid = ["ceil_div(batch, 4)"]
block = [128]
args = ["y", "gamma", "beta", "out", "batch", "out_features", "eps"]

[[scratch]]
name = "y"
dtype = "float32"
size = "batch * out_features"
*/
// Launch 1: y = x . weight^T + bias with a 2 x 2 register micro-tile per thread: a block of at
// most 16 x 16 threads (shrinking with the dims, so a 2 x 2 output is one thread) computes a tile
// of twice its size, outputs (ty + by a, tx + bx b), from 32 x 64 shared panels of x and weight
// (zero-padded), in float32. Launch 2: one warp per row, Welford's (count, mean, M2) per lane
// over a stride-32 slice, merged with Chan's formula along an xor-shuffle butterfly, then
// (y - mean) * rsqrtf(M2 / n + eps) * gamma + beta.
#define TILE 32
#define BK 64

extern "C" __global__ void linear_regtile(const float* __restrict__ x, const float* __restrict__ weight,
                                          const float* __restrict__ bias, float* __restrict__ y, int batch,
                                          int in_features, int out_features) {
    __shared__ float Xs[TILE][BK + 1];
    __shared__ float Ws[TILE][BK + 1];
    const int bx = blockDim.x, by = blockDim.y;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * bx + tx, threads = bx * by;
    const int rows = 2 * by, cols = 2 * bx;          // this block's tile of y
    const int i0 = blockIdx.y * rows, j0 = blockIdx.x * cols;
    float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
    for (int k0 = 0; k0 < in_features; k0 += BK) {
        const int depth = min(BK, in_features - k0);
        for (int e = tid; e < rows * depth; e += threads) {
            const int r = e / depth, kk = e % depth;
            Xs[r][kk] = (i0 + r < batch) ? x[(size_t)(i0 + r) * in_features + k0 + kk] : 0.0f;
        }
        for (int e = tid; e < cols * depth; e += threads) {
            const int r = e / depth, kk = e % depth;
            Ws[r][kk] = (j0 + r < out_features) ? weight[(size_t)(j0 + r) * in_features + k0 + kk] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < depth; ++kk) {
            for (int a = 0; a < 2; ++a)
                for (int b = 0; b < 2; ++b) acc[a][b] += Xs[ty + by * a][kk] * Ws[tx + bx * b][kk];
        }
        __syncthreads();
    }
    for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) {
            const int i = i0 + ty + by * a, j = j0 + tx + bx * b;
            if (i < batch && j < out_features) y[(size_t)i * out_features + j] = acc[a][b] + bias[j];
        }
    }
}

extern "C" __global__ void layernorm_warp_welford(const float* __restrict__ y, const float* __restrict__ gamma,
                                                  const float* __restrict__ beta, float* __restrict__ out, int batch,
                                                  int n, float eps) {
    const int lane = threadIdx.x & 31;
    const int i = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (i >= batch) return;   // whole warps leave
    const float* yr = y + (size_t)i * n;
    float cnt = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int j = lane; j < n; j += 32) {
        const float v = yr[j];
        cnt += 1.0f;
        const float d = v - mean;
        mean += d / cnt;
        m2 += d * (v - mean);
    }
    for (int mask = 1; mask < 32; mask <<= 1) {
        const float cb = __shfl_xor_sync(0xffffffffu, cnt, mask);
        const float mb = __shfl_xor_sync(0xffffffffu, mean, mask);
        const float qb = __shfl_xor_sync(0xffffffffu, m2, mask);
        const float total = cnt + cb;
        if (total > 0.0f) {
            const float d = mb - mean;
            const float wb = cb / total;
            mean += d * wb;
            m2 += qb + d * d * cnt * wb;
            cnt = total;
        }
    }
    const float rstd = rsqrtf(fmaxf(m2, 0.0f) / (float)n + eps);
    float* orow = out + (size_t)i * n;
    for (int j = lane; j < n; j += 32) orow[j] = (yr[j] - mean) * rstd * gamma[j] + beta[j];
}
