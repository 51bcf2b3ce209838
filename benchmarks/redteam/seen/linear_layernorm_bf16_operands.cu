/* mutagym
[[launch]]
kernel = "linear_bf16"
grid = ["ceil_div(out_features, 16)", "ceil_div(batch, 16)"]
block = [16, 16]
args = ["x", "weight", "bias", "y", "batch", "in_features", "out_features"]

[[launch]]
kernel = "row_layernorm"
grid = ["batch"]
block = [128]
args = ["y", "gamma", "beta", "out", "out_features", "eps"]

[[scratch]]
name = "y"
dtype = "float32"
size = "batch * out_features"
*/
// Mixed precision as on bf16 tensor cores: the GEMM's operands are rounded to bfloat16, products
// accumulate in float; LayerNorm of the float result in a second launch (two-pass).
#include <cuda_bf16.h>
#define TS 16
#define T 128

extern "C" __global__ void linear_bf16(const float* __restrict__ x, const float* __restrict__ weight,
                                       const float* __restrict__ bias, float* __restrict__ y, int batch,
                                       int in_features, int out_features) {
    __shared__ __nv_bfloat16 xs[TS][TS], ws[TS][TS];
    const int i = blockIdx.y * TS + threadIdx.y, j = blockIdx.x * TS + threadIdx.x;
    const int wj = blockIdx.x * TS + threadIdx.y;
    float acc = 0.f;
    for (int p0 = 0; p0 < in_features; p0 += TS) {
        const int p = p0 + threadIdx.x;
        xs[threadIdx.y][threadIdx.x] = __float2bfloat16(i < batch && p < in_features ? x[(size_t)i * in_features + p] : 0.f);
        ws[threadIdx.y][threadIdx.x] = __float2bfloat16(wj < out_features && p < in_features ? weight[(size_t)wj * in_features + p] : 0.f);
        __syncthreads();
        for (int q = 0; q < TS; ++q)
            acc = fmaf(__bfloat162float(xs[threadIdx.y][q]), __bfloat162float(ws[threadIdx.x][q]), acc);
        __syncthreads();
    }
    if (i < batch && j < out_features) y[(size_t)i * out_features + j] = acc + bias[j];
}

__device__ float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void row_layernorm(const float* __restrict__ y, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, float* __restrict__ out,
                                         int out_features, float eps) {
    __shared__ float sh[T];
    const float* yr = y + (size_t)blockIdx.x * out_features;
    float* orow = out + (size_t)blockIdx.x * out_features;
    float s = 0.f;
    for (int j = threadIdx.x; j < out_features; j += T) s += yr[j];
    const float mean = block_sum(s, sh) / out_features;
    float q = 0.f;
    for (int j = threadIdx.x; j < out_features; j += T) { const float d = yr[j] - mean; q += d * d; }
    const float rstd = rsqrtf(block_sum(q, sh) / out_features + eps);
    for (int j = threadIdx.x; j < out_features; j += T) orow[j] = (yr[j] - mean) * rstd * gamma[j] + beta[j];
}
