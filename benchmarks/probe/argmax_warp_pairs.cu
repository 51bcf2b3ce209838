/* mutagym
[[launch]]
kernel = "argmax_warp"
grid = ["ceil_div(rows, 2)"]
block = [64]
args = ["x", "out", "rows", "cols"]
*/
// A warp per row; (value, index) pairs move through shuffles and the lower index wins a tie.
extern "C" __global__ void argmax_warp(const float* x, int64_t* out, int rows, int cols) {
    const int r = blockIdx.x * 2 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    float v = -INFINITY;
    int at = 0x7fffffff;
    for (int c = lane; c < cols; c += 32) {
        float y = x[(size_t)r * cols + c];
        if (y > v) { v = y; at = c; }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, v, o);
        int a2 = __shfl_xor_sync(0xffffffffu, at, o);
        if (v2 > v || (v2 == v && a2 < at)) { v = v2; at = a2; }
    }
    if (lane == 0) out[r] = at;
}
