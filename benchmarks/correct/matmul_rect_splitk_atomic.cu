/* mutagym
[[launch]]
kernel = "matmul_rect_splitk"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))", "ceil_div(k, 1024)"]
block = ["min(n, 16)", "min(m, 16)"]
args = ["a", "b", "out", "m", "k", "n"]
fill = {out = 0}
*/
// Split-K with atomics: blockIdx.z owns the K range [1024 z, 1024 z + 1024), so a skinny product
// with a long k (m = 1, k = 2^18) still spreads over 256 blocks. The block is at most 16 x 16 and
// shrinks with m and n; it stages 16 x 64 and 64 x 16 panels of a and b (zero-padded past every
// edge), accumulates each output's partial dot product in a float32 register, and adds it to out with a float atomicAdd (out starts at 0);
// the partial sums of an output land in any order.
#define T 16
#define BK 64
#define KSPLIT 1024

extern "C" __global__ void matmul_rect_splitk(const float* __restrict__ a, const float* __restrict__ b, float* out,
                                              int m, int k, int n) {
    __shared__ float As[T][BK];
    __shared__ float Bs[BK][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty;
    const int col = blockIdx.x * blockDim.x + tx;
    const int k_begin = blockIdx.z * KSPLIT;
    const int k_end = min(k, k_begin + KSPLIT);
    float acc = 0.0f;
    for (int k0 = k_begin; k0 < k_end; k0 += BK) {
        for (int kk = tx; kk < BK; kk += blockDim.x)
            As[ty][kk] = (row < m && k0 + kk < k_end) ? a[(size_t)row * k + k0 + kk] : 0.0f;
        for (int kk = ty; kk < BK; kk += blockDim.y)
            Bs[kk][tx] = (k0 + kk < k_end && col < n) ? b[(size_t)(k0 + kk) * n + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < m && col < n) atomicAdd(out + (size_t)row * n + col, acc);
}
