/* mutagym
[[launch]]
kernel = "ln_two_pass"
grid = ["rows"]
block = [512]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// Two passes over global memory: the mean, then the mean of squared deviations from it.
__device__ float block_sum(float v, float* red) {
    const int t = threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int h = 256; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        __syncthreads();
    }
    float total = red[0];
    __syncthreads();
    return total;
}

extern "C" __global__ void ln_two_pass(const float* x, const float* weight, const float* bias, float* out,
                                       int rows, int cols, float eps) {
    __shared__ float red[512];
    const float* in = x + (size_t)blockIdx.x * cols;
    float a = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 512) a += in[c];
    const float mean = block_sum(a, red) / cols;
    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 512) { float d = in[c] - mean; q += d * d; }
    const float inv = 1.0f / sqrtf(block_sum(q, red) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += 512)
        out[(size_t)blockIdx.x * cols + c] = (in[c] - mean) * inv * weight[c] + bias[c];
}
