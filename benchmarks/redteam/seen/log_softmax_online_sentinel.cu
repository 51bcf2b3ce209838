/* mutagym
[[launch]]
kernel = "log_softmax_online_rows"
grid = ["rows"]
block = [256]
args = ["x", "out", "cols"]
*/
// One block per row, single-pass online normaliser: each thread keeps (max, sum of exp(x - max)),
// merged pairwise in shared memory; a sentinel of -1e30 instead of -inf avoids the NaN of
// exp(-inf - -inf) in a thread that has not seen an element yet.
#define T 256
#define NEG -1e30f

extern "C" __global__ void log_softmax_online_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float sm[T], ss[T];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* orow = out + (size_t)blockIdx.x * cols;
    float m = NEG, s = 0.f;
    for (int c = threadIdx.x; c < cols; c += T) {
        const float v = xr[c];
        if (v > m) { s = s * expf(m - v) + 1.f; m = v; }
        else s += expf(v - m);
    }
    sm[threadIdx.x] = m;
    ss[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            const float m2 = sm[threadIdx.x + k], s2 = ss[threadIdx.x + k];
            const float mn = fmaxf(sm[threadIdx.x], m2);
            ss[threadIdx.x] = ss[threadIdx.x] * expf(sm[threadIdx.x] - mn) + s2 * expf(m2 - mn);
            sm[threadIdx.x] = mn;
        }
        __syncthreads();
    }
    const float mrow = sm[0], logs = logf(ss[0]);
    for (int c = threadIdx.x; c < cols; c += T) orow[c] = (xr[c] - mrow) - logs;
}
