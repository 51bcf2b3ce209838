/* mutagym
[[launch]]
kernel = "lsm_warp"
grid = ["ceil_div(rows, 2)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// Two rows per block, a warp each; one online pass for (max, sum), butterfly merge, then the write.
extern "C" __global__ void lsm_warp(const float* x, float* out, int rows, int cols) {
    const int row = blockIdx.x * 2 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* in = x + (size_t)row * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = in[c];
        if (v > m) {
            s = (m == -INFINITY ? 0.0f : s * expf(m - v)) + 1.0f;
            m = v;
        } else if (v != -INFINITY) {
            s += expf(v - m);
        }
    }
    for (int o = 1; o < 32; o <<= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        float mm = fmaxf(m, m2);
        float a = m == -INFINITY ? 0.0f : s * expf(m - mm);
        float b = m2 == -INFINITY ? 0.0f : s2 * expf(m2 - mm);
        m = mm;
        s = a + b;
    }
    const float lse = m + logf(s);
    for (int c = lane; c < cols; c += 32) out[(size_t)row * cols + c] = in[c] - lse;
}
