/* mutagym
[[launch]]
kernel = "cumprod_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, four rows per block, tiles of 32 elements: a multiplicative __shfl_up_sync scan
// in double, with the product of the earlier tiles carried in double and broadcast from lane 31.
#define ROWS_PER_BLOCK 4

extern "C" __global__ void cumprod_warp(const float* __restrict__ x, float* __restrict__ out,
                                        int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    double carry = 1.0;
    for (int base = 0; base < cols; base += 32) {
        const int c = base + lane;
        double v = c < cols ? (double)xr[c] : 1.0;
        for (int offset = 1; offset < 32; offset <<= 1) {
            const double up = __shfl_up_sync(0xffffffffu, v, offset);
            if (lane >= offset) {
                v *= up;
            }
        }
        v *= carry;
        if (c < cols) {
            outr[c] = (float)v;
        }
        carry = __shfl_sync(0xffffffffu, v, 31);
    }
}
