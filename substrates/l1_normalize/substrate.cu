/* mutagym
[[launch]]
kernel = "l1_normalize_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols", "eps"]
*/
// One block per row: strided per-thread sums of |x|, a shared-memory tree for the row's L1 norm,
// then out = x / max(norm, eps).
#include <math.h>
#define BLOCK 256

extern "C" __global__ void l1_normalize_rows(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols, float eps) {
    __shared__ float partial[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float acc = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        acc += fabsf(xr[c]);
    }
    partial[tid] = acc;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            partial[tid] += partial[tid + stride];
        }
        __syncthreads();
    }
    const float denom = fmaxf(partial[0], eps);
    for (int c = tid; c < cols; c += BLOCK) {
        outr[c] = xr[c] / denom;
    }
}
