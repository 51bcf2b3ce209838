/* mutagym
# 32 x 32 tiles (shrinking with m and n), K step 32 read as half2 pairs where the row allows,
# Kahan-compensated float32 accumulation.
[[launch]]
kernel = "hgemm_tiled_kahan"
grid = ["ceil_div(n, min(n, 32))", "ceil_div(m, min(m, 32))"]
block = ["min(n, 32)", "min(m, 32)"]
shared_bytes = 0
args = ["a", "b", "out", "m", "k", "n"]
*/
#include <cuda_fp16.h>

#define TILE 32
#define BK 32

extern "C" __global__ void hgemm_tiled_kahan(const __half* __restrict__ a,
                                             const __half* __restrict__ b,
                                             float* __restrict__ out, int m, int k, int n) {
    __shared__ float As[TILE][BK + 1];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    float sum = 0.0f;
    float comp = 0.0f;
    for (int k0 = 0; k0 < k; k0 += BK) {
        // a panel: pairs (p, p + 1) come in as one half2 when the pair is inside the row and
        // starts at an even element (4-byte aligned); otherwise element by element
        for (int kk = 2 * tx; kk < BK; kk += 2 * blockDim.x) {
            const int p = k0 + kk;
            const size_t idx = (size_t)row * k + p;
            float v0 = 0.0f;
            float v1 = 0.0f;
            if (row < m) {
                if (p + 1 < k && (idx & 1) == 0) {
                    const float2 v = __half22float2(*reinterpret_cast<const __half2*>(a + idx));
                    v0 = v.x;
                    v1 = v.y;
                } else {
                    if (p < k) v0 = __half2float(a[idx]);
                    if (p + 1 < k) v1 = __half2float(a[idx + 1]);
                }
            }
            As[ty][kk] = v0;
            As[ty][kk + 1] = v1;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < k && col < n) ? __half2float(b[(size_t)p * n + col]) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            const float y = As[ty][kk] * Bs[kk][tx] - comp;
            const float t = sum + y;
            comp = (t - sum) - y;
            sum = t;
        }
        __syncthreads();
    }

    if (row < m && col < n) {
        out[(size_t)row * n + col] = sum;
    }
}
