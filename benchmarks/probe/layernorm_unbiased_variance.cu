/* mutagym
[[launch]]
kernel = "ln_unbiased"
grid = ["rows"]
block = [256]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// Two passes: the mean, then the sample variance sum((x - mean)^2) / (cols - 1).
extern "C" __global__ void ln_unbiased(const float* x, const float* weight, const float* bias, float* out,
                                       int rows, int cols, float eps) {
    __shared__ float red[256];
    const float* in = x + (size_t)blockIdx.x * cols;
    float a = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 256) a += in[c];
    red[threadIdx.x] = a;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    const float mean = red[0] / cols;
    __syncthreads();
    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 256) q += (in[c] - mean) * (in[c] - mean);
    red[threadIdx.x] = q;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    const float inv = rsqrtf(red[0] / (cols - 1) + eps);
    for (int c = threadIdx.x; c < cols; c += 256)
        out[(size_t)blockIdx.x * cols + c] = (in[c] - mean) * inv * weight[c] + bias[c];
}
