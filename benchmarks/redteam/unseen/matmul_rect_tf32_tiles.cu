/* mutagym
[[launch]]
kernel = "sgemm_tf32"
grid = ["ceil_div(n, 16)", "ceil_div(m, 16)"]
block = [16, 16]
args = ["a", "b", "out", "m", "k", "n"]
*/
// 16 x 16 shared-memory tiles. Operands are rounded to TF32 (10-bit mantissa, as the tensor cores'
// cvt.rna.tf32 does) when staged, accumulation stays in float: the TF32 GEMM of cuBLAS' default math.
#define TS 16

__device__ __forceinline__ float to_tf32(float v) {
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
}

extern "C" __global__ void sgemm_tf32(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ out, int m, int k, int n) {
    __shared__ float as[TS][TS], bs[TS][TS];
    const int row = blockIdx.y * TS + threadIdx.y, col = blockIdx.x * TS + threadIdx.x;
    float acc = 0.f;
    for (int p0 = 0; p0 < k; p0 += TS) {
        const int pa = p0 + threadIdx.x, pb = p0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < m && pa < k) ? to_tf32(a[(size_t)row * k + pa]) : 0.f;
        bs[threadIdx.y][threadIdx.x] = (pb < k && col < n) ? to_tf32(b[(size_t)pb * n + col]) : 0.f;
        __syncthreads();
        #pragma unroll
        for (int q = 0; q < TS; ++q) acc = fmaf(as[threadIdx.y][q], bs[q][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < m && col < n) out[(size_t)row * n + col] = acc;
}
