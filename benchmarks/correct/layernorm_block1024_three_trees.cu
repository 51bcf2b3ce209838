/* mutagym
[[launch]]
kernel = "layernorm_block1024"
grid = ["rows"]
block = [1024]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// LayerNorm, one 1024-thread block per row and three shared-memory tree reductions per row:
// the sum (for the mean), the sum of squared deviations (for the variance), and the sum of the
// deviations themselves, which is zero in exact arithmetic and corrects the mean's rounding
// (the "corrected two-pass" algorithm: var = (sum d^2 - (sum d)^2 / n) / n). Every reduction
// halves 1024 partials with a barrier per level: the style whose run time the emulator pays most
// for (ten barriers a tree, 1024 fibers).

#define THREADS 1024

__device__ float block_sum(float v, float* partial) {
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    float total = partial[0];
    __syncthreads();          // everyone has read partial[0] before it is reused
    return total;
}

extern "C" __global__ void layernorm_block1024(const float* x, const float* weight, const float* bias,
                                               float* out, int rows, int cols, float eps) {
    __shared__ float partial[THREADS];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* outr = out + (size_t)blockIdx.x * cols;

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += xr[c];
    const float mean = block_sum(s, partial) / cols;

    float d = 0.0f, d2 = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        float dev = xr[c] - mean;
        d += dev;
        d2 += dev * dev;
    }
    const float sum_d = block_sum(d, partial);
    const float sum_d2 = block_sum(d2, partial);
    const float var = fmaxf((sum_d2 - sum_d * sum_d / cols) / cols, 0.0f);
    const float inv = rsqrtf(var + eps);
    for (int c = threadIdx.x; c < cols; c += THREADS)
        outr[c] = (xr[c] - mean) * inv * weight[c] + bias[c];
}
