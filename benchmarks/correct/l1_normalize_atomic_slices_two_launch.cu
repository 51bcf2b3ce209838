/* mutagym
[[launch]]
kernel = "slice_abs_atomic"
grid = ["rows", "ceil_div(cols, 1024)"]
block = [128]
args = ["x", "norm", "rows", "cols"]

[[launch]]
kernel = "divide_rows"
grid = ["rows", "ceil_div(cols, 1024)"]
block = [128]
args = ["x", "norm", "out", "rows", "cols", "eps"]

[[scratch]]
name = "norm"
dtype = "float32"
size = "rows"
init = "zero"
*/
// Split reduction with atomics: every 1024-column slice of a row is a block whose warps each sum
// |x| over a strided share, reduce it by xor-shuffles and atomicAdd it to the row's norm (order
// not fixed); the second launch divides the same slices by max(norm, eps).
#define SLICE 1024

extern "C" __global__ void slice_abs_atomic(const float* __restrict__ x, float* norm, int rows, int cols) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += blockDim.x) s += fabsf(xr[c]);
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0 && row < rows) atomicAdd(norm + row, s);
}

extern "C" __global__ void divide_rows(const float* __restrict__ x, const float* __restrict__ norm,
                                       float* __restrict__ out, int rows, int cols, float eps) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float d = fmaxf(norm[row], eps);
    const size_t base = (size_t)row * cols;
    for (int c = begin + threadIdx.x; c < end; c += blockDim.x) out[base + c] = x[base + c] / d;
}
