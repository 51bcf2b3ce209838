/* mutagym
[[launch]]
kernel = "matmul_splitk_atomic"
grid = ["ceil_div(n, 16)", "ceil_div(n, 16)", "ceil_div(n, 64)"]
block = [16, 16]
args = ["a", "b", "out", "n"]
fill = {out = 0}
*/
// Split-K with atomics, one launch: blockIdx.z owns the K range [64 z, 64 z + 64); a 16 x 16
// block stages 16 x 16 panels of a and b (zero-padded past the edges) and accumulates its
// outputs' partial dot products over its range in a register, then adds each to out with a
// float atomicAdd (out starts at 0). The ceil(n / 64) partial sums of an output land in any
// order.
#define T 16
#define KSPLIT 64

extern "C" __global__ void matmul_splitk_atomic(const float* __restrict__ a, const float* __restrict__ b, float* out,
                                                int n) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty;
    const int col = blockIdx.x * T + tx;
    const int k_begin = blockIdx.z * KSPLIT;
    const int k_end = min(n, k_begin + KSPLIT);
    float acc = 0.0f;
    for (int k0 = k_begin; k0 < k_end; k0 += T) {
        const int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (row < n && ka < k_end) ? a[(size_t)row * n + ka] : 0.0f;
        Bs[ty][tx] = (kb < k_end && col < n) ? b[(size_t)kb * n + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < T; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < n && col < n) atomicAdd(out + (size_t)row * n + col, acc);
}
