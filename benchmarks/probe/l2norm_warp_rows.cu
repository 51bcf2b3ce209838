/* mutagym
[[launch]]
kernel = "l2_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols", "eps"]
*/
// A warp per row; the divisor is max(||x||, eps) as torch's normalize takes it.
extern "C" __global__ void l2_warp(const float* x, float* out, int rows, int cols, float eps) {
    const int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* in = x + (size_t)r * cols;
    float ss = 0.0f;
    for (int c = lane; c < cols; c += 32) ss = fmaf(in[c], in[c], ss);
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float d = fmaxf(sqrtf(ss), eps);
    for (int c = lane; c < cols; c += 32) out[(size_t)r * cols + c] = in[c] / d;
}
