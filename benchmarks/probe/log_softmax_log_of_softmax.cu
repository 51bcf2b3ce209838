/* mutagym
[[launch]]
kernel = "log_of_softmax"
grid = ["rows"]
block = [512]
args = ["x", "out", "rows", "cols"]
*/
// Softmax with the max subtracted, then the log of each probability.
extern "C" __global__ void log_of_softmax(const float* x, float* out, int rows, int cols) {
    __shared__ float red[512];
    const float* in = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += 512) m = fmaxf(m, in[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int h = 256; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + h]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 512) s += expf(in[c] - m);
    red[threadIdx.x] = s;
    __syncthreads();
    for (int h = 256; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    s = red[0];
    for (int c = threadIdx.x; c < cols; c += 512) out[(size_t)blockIdx.x * cols + c] = logf(expf(in[c] - m) / s);
}
