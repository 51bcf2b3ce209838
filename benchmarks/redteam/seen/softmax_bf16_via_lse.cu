/* mutagym
[[launch]]
kernel = "softmax_bf16_lse"
grid = ["rows"]
block = [128]
args = ["x", "out", "cols"]
*/
// bfloat16 in and out, float inside. Block max and block sum of exp(x - max), then one shift
// L = max + log(sum) so that each output is a single exp(x - L), rounded to bfloat16.
#include <cuda_bf16.h>
#define T 128

__device__ float block_op(float v, bool is_max, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + k])
                                                      : sh[threadIdx.x] + sh[threadIdx.x + k];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax_bf16_lse(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out,
                                            int cols) {
    __shared__ float sh[T];
    const __nv_bfloat16* xr = x + (size_t)blockIdx.x * cols;
    __nv_bfloat16* orow = out + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += T) m = fmaxf(m, __bfloat162float(xr[c]));
    m = block_op(m, true, sh);
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += T) s += expf(__bfloat162float(xr[c]) - m);
    s = block_op(s, false, sh);
    const float lse = m + logf(s);
    for (int c = threadIdx.x; c < cols; c += T) orow[c] = __float2bfloat16(expf(__bfloat162float(xr[c]) - lse));
}
