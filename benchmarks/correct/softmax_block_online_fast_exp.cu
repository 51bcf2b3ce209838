/* mutagym
[[launch]]
kernel = "softmax_online_fast"
grid = ["rows"]
block = [512]
args = ["x", "out", "rows", "cols"]
*/
// Online softmax with the fast exponential: each of 512 threads keeps a running (max m, sum d)
// of __expf(x - m) over its strided slice, the pairs merge by an xor-shuffle butterfly (every
// lane ends with its warp's pair), lane 0 of each warp publishes it, and every thread then
// folds the 16 warp pairs in the same order. __expf's error grows with |x - m| (about
// 1.2 |x - m| ulp), which keeps every term within a few 1e-6 relative; terms below e^-87 flush
// to 0 on a GPU, far under the absolute tolerance.
#define BLOCK 512
#define WARPS (BLOCK / 32)

__device__ __forceinline__ void merge(float& m, float& d, float mb, float db) {
    const float mn = fmaxf(m, mb);
    if (mn == -INFINITY) return;   // neither side has seen a finite logit: (m, d) stays (-inf, 0)
    d = d * __expf(m - mn) + db * __expf(mb - mn);
    m = mn;
}

extern "C" __global__ void softmax_online_fast(const float* __restrict__ x, float* __restrict__ out,
                                               int rows, int cols) {
    __shared__ float wm[WARPS], wd[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    float m = -INFINITY, d = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        const float v = xr[c];
        if (v > m) {
            d = d * __expf(m - v) + 1.0f;   // __expf(-inf) = 0 for the first finite logit
            m = v;
        } else if (v != -INFINITY) {
            d += __expf(v - m);
        }
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        const float mb = __shfl_xor_sync(0xffffffffu, m, mask);
        const float db = __shfl_xor_sync(0xffffffffu, d, mask);
        merge(m, d, mb, db);
    }
    if ((tid & 31) == 0) {
        wm[tid >> 5] = m;
        wd[tid >> 5] = d;
    }
    __syncthreads();
    m = wm[0];
    d = wd[0];
    for (int w = 1; w < WARPS; ++w) merge(m, d, wm[w], wd[w]);
    const float inv = 1.0f / d;
    for (int c = tid; c < cols; c += BLOCK) outr[c] = __expf(xr[c] - m) * inv;
}
