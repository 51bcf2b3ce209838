/* mutagym
[[launch]]
kernel = "hgemm_like"
grid = ["ceil_div(n, 32)", "ceil_div(n, 8)"]
block = [32, 8]
args = ["a", "b", "out", "n"]
*/
// Tiles of a and b staged in shared memory as half (half the shared memory and bandwidth, as on
// fp16 tensor cores), products accumulated in float. 32 x 8 threads, each two rows of the tile.
#include <cuda_fp16.h>
#define TS 32

extern "C" __global__ void hgemm_like(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ out, int n) {
    __shared__ __half as[TS][TS], bs[TS][TS];
    const int col = blockIdx.x * TS + threadIdx.x;
    const int row0 = blockIdx.y * 16 + threadIdx.y;
    float acc0 = 0.f, acc1 = 0.f;
    for (int p0 = 0; p0 < n; p0 += TS) {
        for (int r = threadIdx.y; r < TS; r += 8) {
            const int ar = blockIdx.y * 16 + r, ap = p0 + threadIdx.x, bp = p0 + r;
            as[r][threadIdx.x] = __float2half(r < 16 && ar < n && ap < n ? a[(size_t)ar * n + ap] : 0.f);
            bs[r][threadIdx.x] = __float2half(bp < n && col < n ? b[(size_t)bp * n + col] : 0.f);
        }
        __syncthreads();
        for (int q = 0; q < TS; ++q) {
            const float bv = __half2float(bs[q][threadIdx.x]);
            acc0 = fmaf(__half2float(as[threadIdx.y][q]), bv, acc0);
            acc1 = fmaf(__half2float(as[threadIdx.y + 8][q]), bv, acc1);
        }
        __syncthreads();
    }
    if (col < n && row0 < n) out[(size_t)row0 * n + col] = acc0;
    if (col < n && row0 + 8 < n) out[(size_t)(row0 + 8) * n + col] = acc1;
}
