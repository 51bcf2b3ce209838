/* mutagym
[[launch]]
kernel = "log_softmax_kahan"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Max, then a compensated (Kahan) sum of exp(x - max) per thread, a tree over the block, and
// out = x - max - log(sum).
extern "C" __global__ void log_softmax_kahan(const float* x, float* out, int rows, int cols) {
    __shared__ float red[256];
    const int t = threadIdx.x;
    const float* in = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = t; c < cols; c += 256) m = fmaxf(m, in[c]);
    red[t] = m;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) red[t] = fmaxf(red[t], red[t + h]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f, comp = 0.0f;
    for (int c = t; c < cols; c += 256) {
        float y = expf(in[c] - m) - comp;
        float next = sum + y;
        comp = (next - sum) - y;
        sum = next;
    }
    red[t] = sum;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        __syncthreads();
    }
    const float shift = m + logf(red[0]);
    for (int c = t; c < cols; c += 256) out[(size_t)blockIdx.x * cols + c] = in[c] - shift;
}
