/* mutagym
[[launch]]
kernel = "scan_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// A warp per row: 32-column tiles scanned with shfl_up, the tile's total carried by lane 31.
extern "C" __global__ void scan_warp(const float* x, float* out, int rows, int cols) {
    const int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    float carry = 0.0f;
    for (int base = 0; base < cols; base += 32) {
        int c = base + lane;
        float v = c < cols ? x[(size_t)r * cols + c] : 0.0f;
        for (int d = 1; d < 32; d <<= 1) {
            float up = __shfl_up_sync(0xffffffffu, v, d);
            if (lane >= d) v += up;
        }
        v += carry;
        if (c < cols) out[(size_t)r * cols + c] = v;
        carry = __shfl_sync(0xffffffffu, v, 31);
    }
}
