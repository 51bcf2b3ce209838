/* mutagym
[[launch]]
kernel = "softmax_lse_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, shuffles only. The row's log-sum-exp L = m + log(sum exp(x - m)) is formed
// once and each output is exp(x - L): one exp per element, no divide.
extern "C" __global__ void softmax_lse_warp(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* orow = out + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    const float lse = m + logf(s);
    for (int c = lane; c < cols; c += 32) orow[c] = expf(xr[c] - lse);
}
