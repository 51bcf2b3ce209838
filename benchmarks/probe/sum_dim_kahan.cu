/* mutagym
[[launch]]
kernel = "sum_kahan"
grid = ["rows"]
block = [512]
args = ["x", "out", "rows", "cols"]
*/
// Compensated per-thread sums, merged by a warp shuffle, then across the 16 warps.
extern "C" __global__ void sum_kahan(const float* x, float* out, int rows, int cols) {
    __shared__ float warps[16];
    const float* row = x + (size_t)blockIdx.x * cols;
    float s = 0.0f, c = 0.0f;
    for (int j = threadIdx.x; j < cols; j += 512) {
        float y = row[j] - c;
        float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < 16 ? warps[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) w += __shfl_down_sync(0xffffffffu, w, o);
        if (threadIdx.x == 0) out[blockIdx.x] = w;
    }
}
