/* mutagym
[[launch]]
kernel = "mean_rows_atomic"
grid = ["rows", "ceil_div(cols, 4096)"]
block = [256]
args = ["x", "out", "rows", "cols"]
fill = {out = 0}
*/
// Split reduction with atomics: every 4096-column slice of a row is one block, which reduces
// its slice with warp shuffles and a shared stage, scales the slice sum by 1 / cols, and adds it
// to out[row] with a float atomicAdd (out starts at 0). Slices land in any order.
#define SLICE 4096
#define WARPS 8

extern "C" __global__ void mean_rows_atomic(const float* __restrict__ x, float* out, int rows, int cols) {
    __shared__ float warp_sum[WARPS];
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE;
    const int end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += 256) s += xr[c];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0 && row < rows) {
        float slice = 0.0f;
        for (int w = 0; w < WARPS; ++w) slice += warp_sum[w];
        atomicAdd(out + row, slice * (1.0f / (float)cols));
    }
}
