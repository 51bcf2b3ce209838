/* mutagym
[[launch]]
kernel = "softmax_warp_shuffle"
grid = ["ceil_div(rows, 8)"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, eight rows per block, no shared memory: each lane reduces the stride-32 slice
// of its row, and the lanes' maxima and sums of exponentials are combined by xor shuffles, so
// every lane ends with the row's values. Lanes past a short row hold the neutral -inf and 0.
#include <math.h>
#define ROWS_PER_BLOCK 8
#define FULL_MASK 0xffffffffu

extern "C" __global__ void softmax_warp_shuffle(const float* __restrict__ x, float* __restrict__ out,
                                                int rows, int cols) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= rows) {
        return;  // the whole warp leaves together
    }
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) {
        m = fmaxf(m, xr[c]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, offset));
    }

    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        s += expf(xr[c] - m);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        s += __shfl_xor_sync(FULL_MASK, s, offset);
    }
    const float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) {
        outr[c] = expf(xr[c] - m) * inv;
    }
}
