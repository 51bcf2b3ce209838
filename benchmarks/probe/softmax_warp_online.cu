/* mutagym
[[launch]]
kernel = "softmax_warp_online"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// A warp per row, online normaliser: when the running max grows, the running sum is rescaled.
// Lanes that saw only -inf carry (max -inf, sum 0) and contribute nothing when merged.
__device__ void merge(float& m, float& s, float m2, float s2) {
    float mm = fmaxf(m, m2);
    float a = (m == -INFINITY) ? 0.0f : s * __expf(m - mm) ;
    float b = (m2 == -INFINITY) ? 0.0f : s2 * __expf(m2 - mm);
    m = mm;
    s = a + b;
}

extern "C" __global__ void softmax_warp_online(const float* x, float* out, int rows, int cols) {
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* in = x + (size_t)row * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < cols; c += 32) merge(m, s, in[c], 1.0f);
    for (int o = 16; o >= 1; o >>= 1) {
        float m2 = __shfl_down_sync(0xffffffffu, m, o);
        float s2 = __shfl_down_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
    m = __shfl_sync(0xffffffffu, m, 0);
    s = __shfl_sync(0xffffffffu, s, 0);
    for (int c = lane; c < cols; c += 32) out[(size_t)row * cols + c] = expf(in[c] - m) / s;
}
