/* mutagym
[[launch]]
kernel = "bmm_splitk_f64"
grid = ["ceil_div(n, min(n, 16))", "ceil_div(m, min(m, 16))", "min(batch * ceil_div(k, 4096), 65535)"]
block = ["min(n, 16)", "min(m, 16)"]
args = ["a", "b", "out", "batch", "m", "k", "n", "ceil_div(k, 4096)"]
fill = {out = 0}
*/
// Split-K batched product with atomics: work item q = z * splits + s covers batch z and the K range
// [4096 s, 4096 s + 4096); blocks walk q from blockIdx.z in steps of gridDim.z (batch * splits
// can pass gridDim.z's limit of 65,535). The block is at most 16 x 16 and shrinks with m and n
// (a 2 x 2 output needs 4 threads); it stages 16 x 64 and 64 x 16 panels (zero-padded), each
// thread accumulates its output's partial dot product in double, rounds it to float and adds it
// to out with a float atomicAdd (out starts at 0; the splits land in any order).
#define T 16
#define BK 64
#define KSPLIT 4096

extern "C" __global__ void bmm_splitk_f64(const float* __restrict__ a, const float* __restrict__ b, float* out,
                                          int batch, int m, int k, int n, int splits) {
    __shared__ float As[T][BK];
    __shared__ float Bs[BK][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty, col = blockIdx.x * blockDim.x + tx;
    const long long items = (long long)batch * splits;
    for (long long q = blockIdx.z; q < items; q += gridDim.z) {   // uniform across the block
        const size_t z = q / splits;
        const int k_begin = (int)(q % splits) * KSPLIT;
        const int k_end = min(k, k_begin + KSPLIT);
        const float* az = a + z * m * k;
        const float* bz = b + z * k * n;
        double acc = 0.0;
        for (int k0 = k_begin; k0 < k_end; k0 += BK) {
            for (int kk = tx; kk < BK; kk += blockDim.x)
                As[ty][kk] = (row < m && k0 + kk < k_end) ? az[(size_t)row * k + k0 + kk] : 0.0f;
            for (int kk = ty; kk < BK; kk += blockDim.y)
                Bs[kk][tx] = (k0 + kk < k_end && col < n) ? bz[(size_t)(k0 + kk) * n + col] : 0.0f;
            __syncthreads();
            for (int kk = 0; kk < BK; ++kk) acc += (double)As[ty][kk] * (double)Bs[kk][tx];
            __syncthreads();
        }
        if (row < m && col < n) atomicAdd(out + z * m * n + (size_t)row * n + col, (float)acc);
    }
}
