/* mutagym
[[launch]]
kernel = "min_rows_tree"
grid = ["rows"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 128-thread block per row; each thread takes the minimum of a contiguous chunk of the row
// (not a strided slice), then a shared-memory tree combines the 128 chunk minima.
#include <math.h>
#define BLOCK 128

extern "C" __global__ void min_rows_tree(const float* __restrict__ x, float* __restrict__ out,
                                         int rows, int cols) {
    __shared__ float partial[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;

    const int chunk = (cols + BLOCK - 1) / BLOCK;
    const int begin = tid * chunk;
    const int end = min(begin + chunk, cols);
    float m = INFINITY;
    for (int c = begin; c < end; ++c) {
        m = fminf(m, xr[c]);
    }
    partial[tid] = m;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            partial[tid] = fminf(partial[tid], partial[tid + stride]);
        }
        __syncthreads();
    }
    if (tid == 0 && row < rows) {
        out[row] = partial[0];
    }
}
