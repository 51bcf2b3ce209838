/* mutagym
[[launch]]
kernel = "softmax_warp_regs"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// A warp per row; each lane caches its columns in registers (32 per lane), so the row is read once.
#define PER_LANE 32
extern "C" __global__ void softmax_warp_regs(const float* x, float* out, int rows, int cols) {
    int row = blockIdx.x * 4 + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float v[PER_LANE];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        int c = lane + 32 * j;
        v[j] = c < cols ? x[(size_t)row * cols + c] : -INFINITY;
        m = fmaxf(m, v[j]);
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        v[j] = (lane + 32 * j) < cols ? expf(v[j] - m) : 0.0f;
        s += v[j];
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        int c = lane + 32 * j;
        if (c < cols) out[(size_t)row * cols + c] = v[j] / s;
    }
}
