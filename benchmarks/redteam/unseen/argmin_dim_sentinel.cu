/* mutagym
[[launch]]
kernel = "argmin_rows"
grid = ["rows"]
block = [128]
args = ["x", "out", "cols"]
*/
// One block per row. Each thread keeps its (smallest value, column) over a strided slice, then a
// shared-memory tree merges pairs, lower column first on ties.
#include <stdint.h>

extern "C" __global__ void argmin_rows(const float* __restrict__ x, int64_t* __restrict__ out, int cols) {
    __shared__ float sv[128];
    __shared__ int si[128];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float best = 1e30f;
    int where = 0;
    for (int c = threadIdx.x; c < cols; c += 128) {
        const float v = xr[c];
        if (v < best) { best = v; where = c; }
    }
    sv[threadIdx.x] = best;
    si[threadIdx.x] = where;
    __syncthreads();
    for (int half = 64; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            const float ov = sv[threadIdx.x + half];
            const int oi = si[threadIdx.x + half];
            if (ov < sv[threadIdx.x] || (ov == sv[threadIdx.x] && oi < si[threadIdx.x])) {
                sv[threadIdx.x] = ov;
                si[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = si[0];
}
