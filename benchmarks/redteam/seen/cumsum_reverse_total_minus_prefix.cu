/* mutagym
[[launch]]
kernel = "row_totals"
grid = ["rows"]
block = [256]
args = ["x", "totals", "cols"]

[[launch]]
kernel = "reverse_from_prefix"
grid = ["rows"]
block = [256]
args = ["x", "totals", "out", "cols"]

[[scratch]]
name = "totals"
dtype = "float32"
size = "rows"
*/
// The suffix sum from the forward scan: out[c] = total - (x[0] + ... + x[c - 1]), so the row is
// read front to back like any inclusive scan (coalesced, no reversed indexing).
#define T 256

extern "C" __global__ void row_totals(const float* __restrict__ x, float* __restrict__ totals, int cols) {
    __shared__ float sh[T];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += T) s += xr[c];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) totals[blockIdx.x] = sh[0];
}

extern "C" __global__ void reverse_from_prefix(const float* __restrict__ x, const float* __restrict__ totals,
                                               float* __restrict__ out, int cols) {
    __shared__ float sh[T];
    __shared__ float carry;
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* orow = out + (size_t)blockIdx.x * cols;
    const float total = totals[blockIdx.x];
    if (threadIdx.x == 0) carry = 0.f;
    __syncthreads();
    for (int base = 0; base < cols; base += T) {
        const int c = base + threadIdx.x;
        const float v = c < cols ? xr[c] : 0.f;
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int off = 1; off < T; off <<= 1) {     // inclusive scan of the tile
            const float add = threadIdx.x >= off ? sh[threadIdx.x - off] : 0.f;
            __syncthreads();
            sh[threadIdx.x] += add;
            __syncthreads();
        }
        const float before = carry + sh[threadIdx.x] - v;   // exclusive prefix of c
        if (c < cols) orow[c] = total - before;
        __syncthreads();
        if (threadIdx.x == T - 1) carry += sh[T - 1];
        __syncthreads();
    }
}
