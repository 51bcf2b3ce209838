/* mutagym
# Variant: a single block of 1024 threads; each thread keeps a Kahan-compensated float sum,
# then a shared-memory tree down to 32 values and an xor-butterfly in the first warp.
[[launch]]
kernel = "mse_kahan_block"
grid = [1]
block = [1024]
args = ["predictions", "targets", "out", "n"]
*/
#define BLOCK 1024
#define FULL_MASK 0xffffffffu

extern "C" __global__ void mse_kahan_block(const float* __restrict__ predictions,
                                           const float* __restrict__ targets,
                                           float* __restrict__ out, int n) {
    __shared__ float sdata[BLOCK];
    float sum = 0.0f;
    float comp = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float d = predictions[i] - targets[i];
        const float y = d * d - comp;
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
