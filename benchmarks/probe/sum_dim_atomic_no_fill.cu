/* mutagym
[[launch]]
kernel = "sum_atomic_rows"
grid = ["rows", "ceil_div(cols, 1024)"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// 1024-column slices, each block's sum atomically added into out[row].
extern "C" __global__ void sum_atomic_rows(const float* x, float* out, int rows, int cols) {
    __shared__ float w[8];
    const int c0 = blockIdx.y * 1024, c1 = min(cols, c0 + 1024);
    float s = 0.0f;
    for (int c = c0 + threadIdx.x; c < c1; c += 256) s += x[(size_t)blockIdx.x * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) w[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int k = 0; k < 8; ++k) t += w[k];
        atomicAdd(out + blockIdx.x, t);
    }
}
