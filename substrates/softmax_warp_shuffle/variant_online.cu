/* mutagym
[[launch]]
kernel = "softmax_warp_online"
grid = ["ceil_div(rows, 4)"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, shuffles only, one pass for the statistics: each lane keeps a running maximum
// and a sum of exponentials rescaled whenever its maximum grows (online softmax); lanes then merge
// their (max, sum) pairs by xor shuffles, rescaling both sums to the larger maximum.
#include <math.h>
#define ROWS_PER_BLOCK 4

extern "C" __global__ void softmax_warp_online(const float* __restrict__ x, float* __restrict__ out,
                                               int rows, int cols) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= rows) {
        return;
    }
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float v = xr[c];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;   // expf(-inf) = 0 on the first element
            m = v;
        } else if (m > -INFINITY) {   // -inf against -inf (masked logits) adds nothing
            s += expf(v - m);
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, offset);
        const float so = __shfl_xor_sync(0xffffffffu, s, offset);
        const float mn = fmaxf(m, mo);
        // a lane that saw no element has m = -inf and s = 0: its term contributes nothing
        s = (s == 0.0f ? 0.0f : s * expf(m - mn)) + (so == 0.0f ? 0.0f : so * expf(mo - mn));
        m = mn;
    }
    const float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) {
        outr[c] = expf(xr[c] - m) * inv;
    }
}
