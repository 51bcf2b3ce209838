/* mutagym
[[launch]]
kernel = "suffix_scan"
grid = ["rows"]
block = [256]
args = ["x", "out", "cols"]
*/
// Inclusive prefix as total - (suffix after c): one backward scan over the row (tiles of 256 from
// the end, carried), whose first element is the total, then out[c] = total - suffix[c + 1].
#define T 256

extern "C" __global__ void suffix_scan(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float sh[T];
    __shared__ float carry;
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* orow = out + (size_t)blockIdx.x * cols;
    if (threadIdx.x == 0) carry = 0.f;
    __syncthreads();
    for (int end = cols; end > 0; end -= T) {          // suffix sums into out
        const int c = end - 1 - threadIdx.x;
        sh[threadIdx.x] = c >= 0 ? xr[c] : 0.f;
        __syncthreads();
        for (int off = 1; off < T; off <<= 1) {
            const float add = threadIdx.x >= off ? sh[threadIdx.x - off] : 0.f;
            __syncthreads();
            sh[threadIdx.x] += add;
            __syncthreads();
        }
        if (c >= 0) orow[c] = carry + sh[threadIdx.x];
        __syncthreads();
        if (threadIdx.x == 0) carry += sh[T - 1];
        __syncthreads();
    }
    const float total = orow[0];
    __syncthreads();
    for (int base = 0; base < cols; base += T) {      // each thread reads its c + 1 before any write
        const int c = base + threadIdx.x;
        const float after = (c + 1 < cols) ? orow[c + 1] : 0.f;
        __syncthreads();
        if (c < cols) orow[c] = total - after;
        __syncthreads();
    }
}
