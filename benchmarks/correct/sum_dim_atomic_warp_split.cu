/* mutagym
[[launch]]
kernel = "sum_rows_atomic"
grid = ["rows", "ceil_div(cols, 2048)"]
block = [128]
args = ["x", "out", "rows", "cols"]
fill = {out = 0}
*/
// Split reduction with atomics: each row is cut into 2048-column slices (blockIdx.y), every warp
// of a 128-thread block sums a strided quarter of its slice, reduces it with an xor-shuffle
// butterfly and adds it to out[row] with one float atomicAdd. The order in which the warps'
// atomics land is not fixed, so the float32 rounding differs from run to run; out starts at 0.
#define SLICE 2048

extern "C" __global__ void sum_rows_atomic(const float* __restrict__ x, float* out, int rows, int cols) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE;
    const int end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += blockDim.x) s += xr[c];
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0 && row < rows) atomicAdd(out + row, s);
}
