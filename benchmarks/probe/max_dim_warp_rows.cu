/* mutagym
[[launch]]
kernel = "max_warp_rows"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Eight rows per block, one warp per row, shuffle butterfly; the identity is -inf.
extern "C" __global__ void max_warp_rows(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, x[(size_t)r * cols + c]);
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) out[r] = m;
}
