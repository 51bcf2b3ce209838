/* mutagym
[[launch]]
kernel = "mean_two_level"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Two-level reduction: shuffles within each warp, warp sums to shared memory, warp 0 adds them.
extern "C" __global__ void mean_two_level(const float* x, float* out, int rows, int cols) {
    __shared__ float warp_sum[8];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 256) s += x[(size_t)blockIdx.x * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) warp_sum[warp] = s;
    if (warp == 0) {
        float t = lane < 8 ? warp_sum[lane] : 0.0f;
        for (int o = 4; o > 0; o >>= 1) t += __shfl_down_sync(0xffffffffu, t, o);
        if (lane == 0) out[blockIdx.x] = t / cols;
    }
}
