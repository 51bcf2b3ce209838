/* mutagym
# Variant: per-thread double accumulation, warp-shuffle + shared-memory block reduction in double,
# per-block partials in a poisoned scratch buffer (every slot the grid uses is written), and a
# second launch that reduces exactly gridDim-of-pass-1 partials in double and divides by n.
[[launch]]
kernel = "hinge_partials_f64"
grid = ["min(ceil_div(n, 1024), 256)"]
block = [128]
args = ["predictions", "targets", "partial", "n"]

[[launch]]
kernel = "hinge_finalize_f64"
grid = [1]
block = [256]
args = ["partial", "out", "n"]

[[scratch]]
name = "partial"
dtype = "float64"
size = "min(ceil_div(n, 1024), 256)"
*/
#define FULL_MASK 0xffffffffu
#define ITEMS_PER_BLOCK 1024
#define MAX_PARTIALS 256

__device__ __forceinline__ double warp_reduce_sum_f64(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

__device__ __forceinline__ double block_reduce_sum_f64(double v, double* warp_sums) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_reduce_sum_f64(v);
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    const int num_warps = blockDim.x >> 5;
    v = (threadIdx.x < num_warps) ? warp_sums[lane] : 0.0;
    if (warp == 0) {
        v = warp_reduce_sum_f64(v);
    }
    return v;
}

extern "C" __global__ void hinge_partials_f64(const float* __restrict__ predictions,
                                              const float* __restrict__ targets,
                                              double* __restrict__ partial, int n) {
    __shared__ double warp_sums[32];
    double sum = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const double m = 1.0 - (double)predictions[i] * (double)targets[i];
        sum += m > 0.0 ? m : 0.0;
    }
    sum = block_reduce_sum_f64(sum, warp_sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
    }
}

extern "C" __global__ void hinge_finalize_f64(const double* __restrict__ partial,
                                              float* __restrict__ out, int n) {
    __shared__ double warp_sums[32];
    // Same expression as the first launch's grid: the number of partials written.
    int num_partials = (n + ITEMS_PER_BLOCK - 1) / ITEMS_PER_BLOCK;
    if (num_partials > MAX_PARTIALS) {
        num_partials = MAX_PARTIALS;
    }
    double v = 0.0;
    for (int i = threadIdx.x; i < num_partials; i += blockDim.x) {
        v += partial[i];
    }
    v = block_reduce_sum_f64(v, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = (float)(v / (double)n);
    }
}
