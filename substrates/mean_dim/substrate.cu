/* mutagym
[[launch]]
kernel = "mean_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 256-thread block per row: strided per-thread sums, a shuffle-down reduction inside each
// warp, the eight warp sums through shared memory, a last shuffle in warp 0, then divide by cols.
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void mean_rows(const float* __restrict__ x, float* __restrict__ out, int rows,
                                     int cols) {
    __shared__ float warp_sums[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const float* xr = x + (size_t)row * cols;

    float acc = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        acc += xr[c];
    }
    acc = warp_reduce_sum(acc);
    if (lane == 0) {
        warp_sums[warp] = acc;
    }
    __syncthreads();

    if (warp == 0) {
        float total = (lane < WARPS) ? warp_sums[lane] : 0.0f;
        total = warp_reduce_sum(total);
        if (lane == 0 && row < rows) {
            out[row] = total / (float)cols;
        }
    }
}
