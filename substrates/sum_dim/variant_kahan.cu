/* mutagym
[[launch]]
kernel = "sum_rows_kahan"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 256-thread block per row. Each thread keeps a Kahan-compensated sum of its strided slice;
// the per-thread sums are combined in double precision with an xor-butterfly and a shared stage.
#define BLOCK 256
#define WARPS (BLOCK / 32)

extern "C" __global__ void sum_rows_kahan(const float* __restrict__ x, float* __restrict__ out,
                                          int rows, int cols) {
    __shared__ double warp_totals[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;

    float sum = 0.0f;
    float comp = 0.0f;
    for (int i = tid; i < cols; i += BLOCK) {
        float y = xr[i] - comp;
        float t = sum + y;
        comp = (t - sum) - y;
        sum = t;
    }
    double acc = (double)sum - (double)comp;
    for (int mask = 16; mask > 0; mask >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, mask);
    }
    if (lane == 0) {
        warp_totals[warp] = acc;
    }
    __syncthreads();
    if (warp == 0) {
        double v = lane < WARPS ? warp_totals[lane] : 0.0;
        for (int mask = 16; mask > 0; mask >>= 1) {
            v += __shfl_xor_sync(0xffffffffu, v, mask);
        }
        if (lane == 0 && row < rows) {
            out[row] = (float)v;
        }
    }
}
