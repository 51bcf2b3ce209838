/* mutagym
[[launch]]
kernel = "smooth_l1_partials_f64"
grid = ["min(ceil_div(n, 16384), 128)"]
block = [512]
args = ["predictions", "targets", "partial", "n", "beta"]

[[launch]]
kernel = "smooth_l1_mean_f64"
grid = [1]
block = [128]
args = ["partial", "out", "min(ceil_div(n, 16384), 128)", "n"]

[[scratch]]
name = "partial"
dtype = "float64"
size = "min(ceil_div(n, 16384), 128)"
*/
// Two-level reduction in double: each 512-thread block walks a grid-stride slice, evaluating the
// term in double and summing in double, and a shared-memory tree leaves partial[block]; one
// 128-thread block then adds the partials in double, strided then by a shuffle-down tree over
// its warps, and rounds total / n to float once.
#define BLOCK 512

extern "C" __global__ void smooth_l1_partials_f64(const float* __restrict__ predictions,
                                                  const float* __restrict__ targets, double* __restrict__ partial,
                                                  int n, float beta) {
    __shared__ double sh[BLOCK];
    const double b = beta;
    double s = 0.0;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
        const double z = fabs((double)predictions[i] - (double)targets[i]);
        s += z < b ? 0.5 * z * z / b : z - 0.5 * b;
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

extern "C" __global__ void smooth_l1_mean_f64(const double* __restrict__ partial, float* __restrict__ out,
                                              int parts, int n) {
    __shared__ double warp_sum[4];
    double s = 0.0;
    for (int k = threadIdx.x; k < parts; k += 128) s += partial[k];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = (float)((warp_sum[0] + warp_sum[1] + warp_sum[2] + warp_sum[3]) / (double)n);
}
