/* mutagym
[[launch]]
kernel = "log_softmax_online_tree"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Online log-softmax merged through shared memory: each of 256 threads keeps a running
// (max m, sum d of expf(x - m)) over a contiguous chunk of the row (not a strided slice), the
// 256 pairs meet in a shared-memory tree (pair k absorbs pair k + half), and lse = m + logf(d)
// is broadcast through shared memory; out = x - lse, computed as (x - m) - logf(d).
#define BLOCK 256

__device__ __forceinline__ void merge(float& m, float& d, float mb, float db) {
    const float mn = fmaxf(m, mb);
    if (mn == -INFINITY) return;
    d = d * expf(m - mn) + db * expf(mb - mn);
    m = mn;
}

extern "C" __global__ void log_softmax_online_tree(const float* __restrict__ x, float* __restrict__ out,
                                                   int rows, int cols) {
    __shared__ float sm[BLOCK], sd[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    const int chunk = (cols + BLOCK - 1) / BLOCK;
    const int begin = min(cols, tid * chunk), end = min(cols, begin + chunk);
    float m = -INFINITY, d = 0.0f;
    for (int c = begin; c < end; ++c) {
        const float v = xr[c];
        if (v > m) {
            d = d * expf(m - v) + 1.0f;
            m = v;
        } else if (v != -INFINITY) {
            d += expf(v - m);
        }
    }
    sm[tid] = m;
    sd[tid] = d;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) {
            float a = sm[tid], b = sd[tid];
            merge(a, b, sm[tid + half], sd[tid + half]);
            sm[tid] = a;
            sd[tid] = b;
        }
        __syncthreads();
    }
    const float row_m = sm[0];
    const float log_d = logf(sd[0]);
    for (int c = begin; c < end; ++c) outr[c] = (xr[c] - row_m) - log_d;
}
