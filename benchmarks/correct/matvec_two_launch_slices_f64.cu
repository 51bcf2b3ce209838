/* mutagym
[[launch]]
kernel = "matvec_slices"
grid = ["m * ceil_div(k, 8192)"]
block = [256]
args = ["a", "x", "partial", "k", "ceil_div(k, 8192)"]

[[launch]]
kernel = "matvec_rows"
grid = ["ceil_div(m, 128)"]
block = [128]
args = ["partial", "out", "m", "ceil_div(k, 8192)"]

[[scratch]]
name = "partial"
dtype = "float64"
size = "m * ceil_div(k, 8192)"
*/
// Two launches in double: every 8192-long slice of every row (one block each, flattened in
// gridDim.x) forms its dot product in double and reduces the 256 thread sums with an
// xor-shuffle butterfly and a shared stage into partial[row * slices + slice]; one thread per row
// then adds its slices in double and rounds once.
#define SLICE 8192
#define BLOCK 256

extern "C" __global__ void matvec_slices(const float* __restrict__ a, const float* __restrict__ x,
                                         double* __restrict__ partial, int k, int slices) {
    __shared__ double warp_sum[BLOCK / 32];
    const int row = blockIdx.x / slices;
    const int begin = (blockIdx.x % slices) * SLICE, end = min(k, begin + SLICE);
    const float* ar = a + (size_t)row * k;
    double s = 0.0;
    for (int p = begin + threadIdx.x; p < end; p += BLOCK) s += (double)ar[p] * (double)x[p];
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < BLOCK / 32; ++w) t += warp_sum[w];
        partial[blockIdx.x] = t;
    }
}

extern "C" __global__ void matvec_rows(const double* __restrict__ partial, float* __restrict__ out, int m, int slices) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    double s = 0.0;
    for (int q = 0; q < slices; ++q) s += partial[(size_t)row * slices + q];
    out[row] = (float)s;
}
