/* mutagym
[[launch]]
kernel = "mean_one_warp"
grid = ["rows"]
block = [32]
args = ["x", "out", "rows", "cols"]
*/
// 32-thread blocks: a single warp per row, four independent accumulators per lane, shuffles only.
extern "C" __global__ void mean_one_warp(const float* x, float* out, int rows, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int c = threadIdx.x;
    for (; c + 96 < cols; c += 128) { a0 += row[c]; a1 += row[c + 32]; a2 += row[c + 64]; a3 += row[c + 96]; }
    for (; c < cols; c += 32) a0 += row[c];
    float s = (a0 + a1) + (a2 + a3);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) out[blockIdx.x] = s / (float)cols;
}
