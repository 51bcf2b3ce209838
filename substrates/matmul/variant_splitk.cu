/* mutagym
# Split-K: blockIdx.z owns one slice of the reduction and writes its partial tile to scratch;
# the second launch adds the slices in slice order. Tiles of 16 x 16 with a K step of 16.
[[launch]]
kernel = "matmul_splitk_partial"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(n, min(n, 16))", "min(ceil_div(n, 32), 4)"]
block = ["min(n, 16)", "min(n, 16)"]
shared_bytes = 0
args = ["a", "b", "partial", "n"]

[[launch]]
kernel = "matmul_splitk_reduce"
grid = ["min(ceil_div(n * n, 256), 1024)"]
block = [256]
shared_bytes = 0
args = ["partial", "out", "n"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "min(ceil_div(n, 32), 4) * n * n"
*/
#define TILE 16
#define BK 16
#define SLICE_MIN 32   // slices = min(ceil_div(n, SLICE_MIN), MAX_SLICES), as in the launch plan
#define MAX_SLICES 4

extern "C" __global__ void matmul_splitk_partial(const float* __restrict__ a,
                                                 const float* __restrict__ b,
                                                 float* __restrict__ partial, int n) {
    __shared__ float As[TILE][BK];
    __shared__ float Bs[BK][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;

    // this block's slice [kbeg, kend) of the shared dimension, a whole number of K steps long
    const int slices = gridDim.z;
    const int chunk = ((n + slices - 1) / slices + BK - 1) / BK * BK;
    const int kbeg = blockIdx.z * chunk;
    const int kend = min(n, kbeg + chunk);

    float acc = 0.0f;
    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x) {
            const int k = k0 + kk;
            As[ty][kk] = (row < n && k < kend) ? a[(size_t)row * n + k] : 0.0f;
        }
        for (int kk = ty; kk < BK; kk += blockDim.y) {
            const int k = k0 + kk;
            Bs[kk][tx] = (k < kend && col < n) ? b[(size_t)k * n + col] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }

    // every slice writes its tile, an empty slice writes zeros
    if (row < n && col < n) {
        partial[(size_t)blockIdx.z * n * n + (size_t)row * n + col] = acc;
    }
}

extern "C" __global__ void matmul_splitk_reduce(const float* __restrict__ partial,
                                                float* __restrict__ out, int n) {
    const int slices = min((n + SLICE_MIN - 1) / SLICE_MIN, MAX_SLICES);
    const size_t total = (size_t)n * n;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int z = 0; z < slices; ++z) {
            s += partial[(size_t)z * total + i];
        }
        out[i] = s;
    }
}
