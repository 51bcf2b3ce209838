/* mutagym
[[launch]]
kernel = "slice_sumsq_atomic"
grid = ["rows", "ceil_div(cols, 4096)"]
block = [256]
args = ["x", "sumsq", "rows", "cols"]

[[launch]]
kernel = "scale_rows"
grid = ["rows", "ceil_div(cols, 4096)"]
block = [256]
args = ["x", "weight", "sumsq", "out", "rows", "cols", "eps"]

[[scratch]]
name = "sumsq"
dtype = "float32"
size = "rows"
init = "zero"
*/
// Split reduction with atomics, two launches: every 4096-column slice of a row is one block that
// reduces its sum of squares (warp shuffle-down, warp sums through shared memory) and adds it to
// the row's sum with a float atomicAdd, in any order; the second launch scales the same slices by
// rsqrtf(sum / cols + eps) * weight.
#define SLICE 4096
#define WARPS 8

extern "C" __global__ void slice_sumsq_atomic(const float* __restrict__ x, float* sumsq, int rows, int cols) {
    __shared__ float warp_sum[WARPS];
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += 256) s += xr[c] * xr[c];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < WARPS ? warp_sum[threadIdx.x] : 0.0f;
        for (int offset = 4; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (threadIdx.x == 0 && row < rows) atomicAdd(sumsq + row, v);
    }
}

extern "C" __global__ void scale_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                      const float* __restrict__ sumsq, float* __restrict__ out, int rows, int cols,
                                      float eps) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(cols, begin + SLICE);
    const float inv = rsqrtf(sumsq[row] / (float)cols + eps);
    const size_t base = (size_t)row * cols;
    for (int c = begin + threadIdx.x; c < end; c += 256) out[base + c] = x[base + c] * inv * weight[c];
}
