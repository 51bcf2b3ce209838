/* mutagym
[[launch]]
kernel = "rms_warp"
grid = ["ceil_div(rows, 16)"]
block = [512]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// Sixteen rows per block, a warp each; squares summed in double, shuffles merge the lanes.
extern "C" __global__ void rms_warp(const float* x, const float* weight, float* out, int rows, int cols, float eps) {
    const int r = blockIdx.x * 16 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* in = x + (size_t)r * cols;
    double ss = 0.0;
    for (int c = lane; c < cols; c += 32) ss += (double)in[c] * in[c];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float scale = (float)(1.0 / sqrt(ss / cols + (double)eps));
    for (int c = lane; c < cols; c += 32) out[(size_t)r * cols + c] = in[c] * scale * weight[c];
}
