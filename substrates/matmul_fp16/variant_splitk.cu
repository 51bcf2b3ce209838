/* mutagym
# Split-K: blockIdx.z owns one slice of k (up to 8 slices of at least 64) and writes a float32
# partial tile to scratch; the second launch adds the slices in order.
[[launch]]
kernel = "hgemm_splitk_partial"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))", "min(ceil_div(k, 64), 8)"]
block = ["min(n, 16)", "min(m, 16)"]
shared_bytes = 0
args = ["a", "b", "partial", "m", "k", "n"]

[[launch]]
kernel = "hgemm_splitk_reduce"
grid = ["min(ceil_div(m * n, 256), 1024)"]
block = [256]
shared_bytes = 0
args = ["partial", "out", "m", "k", "n"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "min(ceil_div(k, 64), 8) * m * n"
*/
#include <cuda_fp16.h>

#define TILE 16
#define BK 16
#define SLICE_MIN 64   // slices = min(ceil_div(k, SLICE_MIN), MAX_SLICES), as in the launch plan
#define MAX_SLICES 8

// Panels are converted to float32 as they are staged.
extern "C" __global__ void hgemm_splitk_partial(const __half* __restrict__ a,
                                                const __half* __restrict__ b,
                                                float* __restrict__ partial, int m, int k, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    const int slices = gridDim.z;
    const int chunk = ((k + slices - 1) / slices + BK - 1) / BK * BK;
    const int kbeg = blockIdx.z * chunk;
    const int kend = min(k, kbeg + chunk);

    float acc = 0.0f;
    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int p = k0 + kk;
            As[ty][kk] = (row < m && p < kend) ? __half2float(a[(size_t)row * k + p]) : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int p = k0 + kk;
            Bs[kk][tx] = (p < kend && col < n) ? __half2float(b[(size_t)p * n + col]) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    if (row < m && col < n) {
        partial[(size_t)blockIdx.z * m * n + (size_t)row * n + col] = acc;
    }
}

extern "C" __global__ void hgemm_splitk_reduce(const float* __restrict__ partial,
                                               float* __restrict__ out, int m, int k, int n) {
    const int slices = min((k + SLICE_MIN - 1) / SLICE_MIN, MAX_SLICES);
    const size_t total = (size_t)m * n;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int z = 0; z < slices; ++z) {
            s += partial[(size_t)z * total + i];
        }
        out[i] = s;
    }
}
