/* mutagym
[[launch]]
kernel = "l2_normalize_scaled"
grid = ["ceil_div(rows, 8)"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols", "eps"]
*/
// One warp per row, eight rows per block, scaled like BLAS nrm2: first the row's largest |x| = m,
// then sum((x / m)^2), norm = m * sqrt(sum). No square ever overflows or underflows on its own.
#include <math.h>
#define ROWS_PER_BLOCK 8

extern "C" __global__ void l2_normalize_scaled(const float* __restrict__ x, float* __restrict__ out,
                                               int rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) {
        return;  // whole warps only
    }
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float m = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        m = fmaxf(m, fabsf(xr[c]));
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    }
    float norm = 0.0f;
    if (m > 0.0f) {
        const float inv_m = 1.0f / m;
        float ss = 0.0f;
        for (int c = lane; c < cols; c += 32) {
            const float v = xr[c] * inv_m;
            ss = fmaf(v, v, ss);
        }
        for (int mask = 16; mask > 0; mask >>= 1) {
            ss += __shfl_xor_sync(0xffffffffu, ss, mask);
        }
        norm = m * sqrtf(ss);
    }
    const float denom = fmaxf(norm, eps);
    for (int c = lane; c < cols; c += 32) {
        outr[c] = xr[c] / denom;
    }
}
