/* mutagym
[[launch]]
kernel = "linear_f64"
grid = ["ceil_div(out_features, 32)", "ceil_div(batch, 4)"]
block = [32, 4]
args = ["x", "weight", "bias", "y", "batch", "in_features", "out_features"]

[[launch]]
kernel = "layernorm_rows_f64"
grid = ["batch"]
block = [256]
args = ["y", "gamma", "beta", "out", "out_features", "eps"]

[[scratch]]
name = "y"
dtype = "float64"
size = "batch * out_features"
*/
// Everything in double until the output. Launch 1: one thread per (row, feature), the dot product
// straight from global memory in double, plus bias, into a double scratch y. Launch 2: one block
// per row, two passes over y (mean, then the sum of squared deviations) each reduced by a
// shared-memory tree of doubles, and out = (y - mean) / sqrt(var + eps) * gamma + beta rounded
// once.
#define BLOCK 256

extern "C" __global__ void linear_f64(const float* __restrict__ x, const float* __restrict__ weight,
                                      const float* __restrict__ bias, double* __restrict__ y, int batch,
                                      int in_features, int out_features) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= batch || j >= out_features) return;
    const float* xr = x + (size_t)i * in_features;
    const float* wr = weight + (size_t)j * in_features;
    double dot = 0.0;
    for (int p = 0; p < in_features; ++p) dot += (double)xr[p] * (double)wr[p];
    y[(size_t)i * out_features + j] = dot + (double)bias[j];
}

__device__ double block_sum(double v, double* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    const double r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void layernorm_rows_f64(const double* __restrict__ y, const float* __restrict__ gamma,
                                              const float* __restrict__ beta, float* __restrict__ out, int n,
                                              float eps) {
    __shared__ double sh[BLOCK];
    const double* yr = y + (size_t)blockIdx.x * n;
    double s = 0.0;
    for (int j = threadIdx.x; j < n; j += BLOCK) s += yr[j];
    const double mean = block_sum(s, sh) / n;
    double q = 0.0;
    for (int j = threadIdx.x; j < n; j += BLOCK) q += (yr[j] - mean) * (yr[j] - mean);
    const double inv = 1.0 / sqrt(block_sum(q, sh) / n + (double)eps);
    float* orow = out + (size_t)blockIdx.x * n;
    for (int j = threadIdx.x; j < n; j += BLOCK) orow[j] = (float)((yr[j] - mean) * inv * (double)gamma[j] + (double)beta[j]);
}
