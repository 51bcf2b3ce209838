/* mutagym
[[launch]]
kernel = "sum_rows_shfl"
grid = ["rows"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 128-thread block per row; warp-shuffle butterfly inside each warp, then warp 0 combines the
// four warp sums. Different block size and tree shape from the substrate.
#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void sum_rows_shfl(const float* __restrict__ x, float* __restrict__ out,
                                         int rows, int cols) {
    __shared__ float warp_totals[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;

    float acc = 0.0f;
    for (int i = tid; i < cols; i += BLOCK) {
        acc += xr[i];
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        warp_totals[warp] = acc;
    }
    __syncthreads();
    if (warp == 0) {
        float v = lane < WARPS ? warp_totals[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0 && row < rows) {
            out[row] = v;
        }
    }
}
