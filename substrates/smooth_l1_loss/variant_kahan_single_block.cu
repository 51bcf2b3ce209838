/* mutagym
# Variant: a single block of 1024 threads with Kahan-compensated per-thread sums, a shared-memory
# tree to 32 values, an xor-butterfly in the first warp, and the division by n in thread 0.
[[launch]]
kernel = "smooth_l1_kahan_block"
grid = [1]
block = [1024]
args = ["predictions", "targets", "out", "n", "beta"]
*/
#define BLOCK 1024
#define FULL_MASK 0xffffffffu

extern "C" __global__ void smooth_l1_kahan_block(const float* __restrict__ predictions,
                                                 const float* __restrict__ targets,
                                                 float* __restrict__ out, int n, float beta) {
    __shared__ float sdata[BLOCK];
    const float half_over_beta = 0.5f / beta;
    float sum = 0.0f;
    float comp = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float z = fabsf(predictions[i] - targets[i]);
        const float term = (z < beta) ? z * z * half_over_beta : z - 0.5f * beta;
        const float y = term - comp;
        const float t = sum + y;
        comp = (t - sum) - y;
        sum = t;
    }
    sdata[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s >= 32; s >>= 1) {
        if (threadIdx.x < s) {
            sdata[threadIdx.x] += sdata[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        float v = sdata[threadIdx.x];
        for (int mask = 16; mask > 0; mask >>= 1) {
            v += __shfl_xor_sync(FULL_MASK, v, mask);
        }
        if (threadIdx.x == 0) {
            out[0] = v / (float)n;
        }
    }
}
