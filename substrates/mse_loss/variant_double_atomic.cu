/* mutagym
# Variant: per-thread double accumulation, shared-memory tree over 512 threads, block partials
# added with atomicAdd(double) into a zero-initialised accumulator; a one-thread launch divides.
[[launch]]
kernel = "mse_accumulate_f64"
grid = ["min(ceil_div(n, 4096), 32)"]
block = [512]
args = ["predictions", "targets", "acc", "n"]

[[launch]]
kernel = "mse_write_mean"
grid = [1]
block = [1]
args = ["acc", "out", "n"]

[[scratch]]
name = "acc"
dtype = "float64"
size = "1"
init = "zero"
*/
#define BLOCK 512

extern "C" __global__ void mse_accumulate_f64(const float* __restrict__ predictions,
                                              const float* __restrict__ targets,
                                              double* __restrict__ acc, int n) {
    __shared__ double sdata[BLOCK];
    double sum = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const double d = (double)predictions[i] - (double)targets[i];
        sum += d * d;
    }
    sdata[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sdata[threadIdx.x] += sdata[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(acc, sdata[0]);
    }
}

extern "C" __global__ void mse_write_mean(const double* __restrict__ acc, float* __restrict__ out, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = (float)(acc[0] / (double)n);
    }
}
