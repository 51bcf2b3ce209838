/* mutagym
# Variant: a single block of 1024 threads over all batch * classes elements, Kahan-compensated
# per-thread sums of t*log(t) - t*log(p), shared-memory tree to 32 values, xor-butterfly.
[[launch]]
kernel = "kl_div_kahan_block"
grid = [1]
block = [1024]
args = ["predictions", "targets", "out", "batch", "classes"]
*/
#define BLOCK 1024
#define FULL_MASK 0xffffffffu

extern "C" __global__ void kl_div_kahan_block(const float* __restrict__ predictions,
                                              const float* __restrict__ targets,
                                              float* __restrict__ out, int batch, int classes) {
    __shared__ float sdata[BLOCK];
    const int n = batch * classes;
    float sum = 0.0f;
    float comp = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float t = targets[i];
        const float term = (t > 0.0f) ? t * logf(t) - t * logf(predictions[i]) : 0.0f;
        const float y = term - comp;
        const float s = sum + y;
        comp = (s - sum) - y;
        sum = s;
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
            out[0] = v / (float)batch;
        }
    }
}
