/* mutagym
# Variant: one block of 512 threads, Kahan-compensated per-thread sums, a pure shared-memory
# tree reduction with __syncthreads at every level, division by n in thread 0.
[[launch]]
kernel = "hinge_kahan_block"
grid = [1]
block = [512]
args = ["predictions", "targets", "out", "n"]
*/
#define BLOCK 512

extern "C" __global__ void hinge_kahan_block(const float* __restrict__ predictions,
                                             const float* __restrict__ targets,
                                             float* __restrict__ out, int n) {
    __shared__ float sdata[BLOCK];
    float sum = 0.0f;
    float comp = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float term = fmaxf(1.0f - predictions[i] * targets[i], 0.0f);
        const float y = term - comp;
        const float t = sum + y;
        comp = (t - sum) - y;
        sum = t;
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
        out[0] = sdata[0] / (float)n;
    }
}
