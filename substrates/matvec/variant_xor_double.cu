/* mutagym
# One warp per row, 4 warps per block, products summed in double, butterfly (xor) shuffles.
[[launch]]
kernel = "matvec_warp_rows_f64acc"
grid = ["min(ceil_div(m, 4), 2048)"]
block = [128]
shared_bytes = 0
args = ["a", "x", "out", "m", "k"]
*/
#define WARP_SIZE 32
#define WARPS_PER_BLOCK 4
#define FULL_MASK 0xffffffffu

extern "C" __global__ void matvec_warp_rows_f64acc(const float* __restrict__ a,
                                                   const float* __restrict__ x,
                                                   float* __restrict__ out, int m, int k) {
    const int lane = threadIdx.x & (WARP_SIZE - 1);
    const int warp = threadIdx.x / WARP_SIZE;

    for (int row = blockIdx.x * WARPS_PER_BLOCK + warp; row < m;
         row += gridDim.x * WARPS_PER_BLOCK) {
        const float* __restrict__ arow = a + (size_t)row * k;
        double sum = 0.0;
        for (int i = lane; i < k; i += WARP_SIZE) {
            sum += (double)arow[i] * (double)x[i];
        }
        // butterfly: after the loop every lane holds the full sum
        for (int mask = WARP_SIZE / 2; mask > 0; mask >>= 1) {
            sum += __shfl_xor_sync(FULL_MASK, sum, mask);
        }
        if (lane == 0) {
            out[row] = (float)sum;
        }
    }
}
