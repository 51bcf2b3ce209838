/* mutagym
[[launch]]
kernel = "rms_half_acc"
grid = ["rows"]
block = [64]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
#include <cuda_fp16.h>
// Each thread keeps its sum of squares in a __half register (fused multiply-adds in half), the
// block tree in float.
extern "C" __global__ void rms_half_acc(const float* x, const float* weight, float* out, int rows, int cols, float eps) {
    __shared__ float red[64];
    const float* in = x + (size_t)blockIdx.x * cols;
    __half ss = __float2half(0.0f);
    for (int c = threadIdx.x; c < cols; c += 64) {
        __half v = __float2half(in[c]);
        ss = __hfma(v, v, ss);
    }
    red[threadIdx.x] = __half2float(ss);
    __syncthreads();
    for (int h = 32; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    const float scale = rsqrtf(red[0] / cols + eps);
    for (int c = threadIdx.x; c < cols; c += 64) out[(size_t)blockIdx.x * cols + c] = in[c] * scale * weight[c];
}
