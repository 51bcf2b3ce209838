/* mutagym
# Variant: one warp per row, the three sums accumulated in double and combined with an
# xor-butterfly; lane 0 adds 1 - cos to a zero-initialised double accumulator, and a one-thread
# launch divides by batch.
[[launch]]
kernel = "cosine_warp_rows"
grid = ["ceil_div(batch, 4)"]
block = [128]
args = ["a", "b", "acc", "batch", "dim", "eps"]

[[launch]]
kernel = "cosine_write_mean"
grid = [1]
block = [1]
args = ["acc", "out", "batch"]

[[scratch]]
name = "acc"
dtype = "float64"
size = "1"
init = "zero"
*/
#define FULL_MASK 0xffffffffu
#define WARPS_PER_BLOCK 4

extern "C" __global__ void cosine_warp_rows(const float* __restrict__ a, const float* __restrict__ b,
                                            double* __restrict__ acc, int batch, int dim, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (row < batch) {
        const size_t offset = (size_t)row * (size_t)dim;
        double dot = 0.0, aa = 0.0, bb = 0.0;
        for (int j = lane; j < dim; j += 32) {
            const double x = (double)a[offset + j];
            const double y = (double)b[offset + j];
            dot += x * y;
            aa += x * x;
            bb += y * y;
        }
        for (int mask = 16; mask > 0; mask >>= 1) {
            dot += __shfl_xor_sync(FULL_MASK, dot, mask);
            aa += __shfl_xor_sync(FULL_MASK, aa, mask);
            bb += __shfl_xor_sync(FULL_MASK, bb, mask);
        }
        if (lane == 0) {
            const double e = (double)eps;
            const double na = fmax(sqrt(aa), e);
            const double nb = fmax(sqrt(bb), e);
            atomicAdd(acc, 1.0 - dot / (na * nb));
        }
    }
}

extern "C" __global__ void cosine_write_mean(const double* __restrict__ acc, float* __restrict__ out, int batch) {
    if (threadIdx.x == 0) {
        out[0] = (float)(acc[0] / (double)batch);
    }
}
