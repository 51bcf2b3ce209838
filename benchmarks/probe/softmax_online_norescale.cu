/* mutagym
[[launch]]
kernel = "softmax_online"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// One block per row. Each thread keeps a running max and a running sum of exp(x - max) over its
// columns (one pass over the data), then the block merges the (max, sum) pairs.
#define T 256
extern "C" __global__ void softmax_online(const float* x, float* out, int rows, int cols) {
    __shared__ float sm[T], ss[T];
    const float* row = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += T) {
        float v = row[c];
        if (v > m) m = v;
        s += expf(v - m);
    }
    sm[threadIdx.x] = m;
    ss[threadIdx.x] = s;
    __syncthreads();
    for (int h = T / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            float m1 = sm[threadIdx.x], m2 = sm[threadIdx.x + h];
            float mm = fmaxf(m1, m2);
            float a = m1 == -INFINITY ? 0.0f : ss[threadIdx.x] * expf(m1 - mm);
            float b = m2 == -INFINITY ? 0.0f : ss[threadIdx.x + h] * expf(m2 - mm);
            sm[threadIdx.x] = mm;
            ss[threadIdx.x] = a + b;
        }
        __syncthreads();
    }
    float mx = sm[0], inv = 1.0f / ss[0];
    for (int c = threadIdx.x; c < cols; c += T) out[(size_t)blockIdx.x * cols + c] = expf(row[c] - mx) * inv;
}
