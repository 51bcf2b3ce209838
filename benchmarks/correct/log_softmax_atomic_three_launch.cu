/* mutagym
[[launch]]
kernel = "slice_max_atomic"
grid = ["rows", "ceil_div(cols, 2048)"]
block = [256]
args = ["x", "max_key", "rows", "cols"]

[[launch]]
kernel = "slice_sum_atomic"
grid = ["rows", "ceil_div(cols, 2048)"]
block = [256]
args = ["x", "max_key", "sum", "rows", "cols"]

[[launch]]
kernel = "write_log_softmax"
grid = ["rows", "ceil_div(cols, 2048)"]
block = [256]
args = ["x", "max_key", "sum", "out", "rows", "cols"]

[[scratch]]
name = "max_key"
dtype = "uint32"
size = "rows"
init = "zero"

[[scratch]]
name = "sum"
dtype = "float32"
size = "rows"
init = "zero"
*/
// Split reductions with atomics over three launches; every 2048-column slice of a row is one
// block. 1: the row maximum by atomicMax on an order-preserving unsigned key of the float's bits
// (negative floats flip all bits, others flip the sign bit; key 0 is below every float). 2: each
// warp adds its share of sum(expf(x - m)) to the row's sum with a float atomicAdd, in whatever
// order the warps arrive. 3: out = x - m - logf(sum).
#define SLICE 2048

__device__ __forceinline__ unsigned int float_key(float f) {
    const unsigned int b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float key_float(unsigned int k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

extern "C" __global__ void slice_max_atomic(const float* __restrict__ x, unsigned int* max_key, int rows,
                                            int cols) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = begin + threadIdx.x; c < end; c += blockDim.x) m = fmaxf(m, xr[c]);
    for (int mask = 16; mask > 0; mask >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    if ((threadIdx.x & 31) == 0 && row < rows) atomicMax(max_key + row, float_key(m));
}

extern "C" __global__ void slice_sum_atomic(const float* __restrict__ x, const unsigned int* __restrict__ max_key,
                                            float* sum, int rows, int cols) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    const float m = key_float(max_key[row]);
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += blockDim.x) s += expf(xr[c] - m);
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0 && row < rows) atomicAdd(sum + row, s);
}

extern "C" __global__ void write_log_softmax(const float* __restrict__ x, const unsigned int* __restrict__ max_key,
                                             const float* __restrict__ sum, float* __restrict__ out, int rows,
                                             int cols) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float m = key_float(max_key[row]);
    const float log_s = logf(sum[row]);
    const size_t base = (size_t)row * cols;
    for (int c = begin + threadIdx.x; c < end; c += blockDim.x) out[base + c] = (x[base + c] - m) - log_s;
}
