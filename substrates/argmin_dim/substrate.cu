/* mutagym
[[launch]]
kernel = "argmin_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row. Each thread keeps (smallest value, its column) over a strided slice, taking
// a new value only if it is strictly smaller, so the first occurrence wins inside a thread. A
// shared-memory tree then merges pairs, breaking ties by the smaller column index (torch returns
// the first).
#include <math.h>
#include <stdint.h>
#define BLOCK 256

extern "C" __global__ void argmin_rows(const float* __restrict__ x, int64_t* __restrict__ out,
                                       int rows, int cols) {
    __shared__ float s_val[BLOCK];
    __shared__ int s_idx[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;

    float best = INFINITY;
    int best_idx = cols;  // past the end: loses every tie against a real column
    for (int c = tid; c < cols; c += BLOCK) {
        float v = xr[c];
        if (v < best) {
            best = v;
            best_idx = c;
        }
    }
    s_val[tid] = best;
    s_idx[tid] = best_idx;
    __syncthreads();

    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            float other = s_val[tid + stride];
            int other_idx = s_idx[tid + stride];
            if (other < s_val[tid] || (other == s_val[tid] && other_idx < s_idx[tid])) {
                s_val[tid] = other;
                s_idx[tid] = other_idx;
            }
        }
        __syncthreads();
    }
    if (tid == 0 && row < rows) {
        out[row] = (int64_t)s_idx[0];
    }
}
