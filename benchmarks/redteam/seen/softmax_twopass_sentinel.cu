/* mutagym
[[launch]]
kernel = "softmax_rows"
grid = ["rows"]
block = [256]
args = ["x", "out", "cols"]
*/
// One block per row: block max, block sum of exp(x - max), then a scaling pass. The reductions
// go through warp shuffles and one shared slot per warp.
#define THREADS 256

__device__ float block_reduce(float v, bool is_max, float* slots) {
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_down_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < THREADS / 32) ? slots[lane] : (is_max ? -1e20f : 0.0f);
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_down_sync(0xffffffffu, v, off);
            v = is_max ? fmaxf(v, o) : v + o;
        }
        if (lane == 0) slots[0] = v;
    }
    __syncthreads();
    v = slots[0];
    __syncthreads();
    return v;
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float slots[THREADS / 32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* orow = out + (size_t)blockIdx.x * cols;
    float m = -1e20f;   // "minus infinity" for the running max
    for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, xr[c]);
    m = block_reduce(m, true, slots);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += expf(xr[c] - m);
    s = block_reduce(s, false, slots);
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += THREADS) orow[c] = expf(xr[c] - m) * inv;
}
