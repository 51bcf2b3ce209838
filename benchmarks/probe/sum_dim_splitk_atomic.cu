/* mutagym
[[launch]]
kernel = "sum_split_atomic"
grid = ["rows", "ceil_div(cols, 4096)"]
block = [256]
args = ["x", "out", "rows", "cols"]
fill = {out = 0}
*/
// Rows split into 4096-column slices; each block atomically adds its slice's sum (out starts at 0).
extern "C" __global__ void sum_split_atomic(const float* x, float* out, int rows, int cols) {
    __shared__ float sh[256];
    const int begin = blockIdx.y * 4096, end = min(cols, begin + 4096);
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += 256) s += x[(size_t)blockIdx.x * cols + c];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out + blockIdx.x, sh[0]);
}
