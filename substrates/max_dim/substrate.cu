/* mutagym
[[launch]]
kernel = "max_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row. Threads scan a strided slice (float4 loads when cols % 4 == 0 keeps every row
// 16-byte aligned), starting from -INFINITY, then a shared-memory tree takes the maximum.
#include <math.h>
#define BLOCK 256

extern "C" __global__ void max_rows(const float* __restrict__ x, float* __restrict__ out, int rows,
                                    int cols) {
    __shared__ float partial[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;

    float best = -INFINITY;
    if (cols % 4 == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < cols / 4; i += BLOCK) {
            float4 v = x4[i];
            best = fmaxf(best, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        }
    } else {
        for (int i = tid; i < cols; i += BLOCK) {
            best = fmaxf(best, xr[i]);
        }
    }
    partial[tid] = best;
    __syncthreads();

    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            partial[tid] = fmaxf(partial[tid], partial[tid + stride]);
        }
        __syncthreads();
    }
    if (tid == 0 && row < rows) {
        out[row] = partial[0];
    }
}
