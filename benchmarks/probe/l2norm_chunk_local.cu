/* mutagym
[[launch]]
kernel = "l2_chunks"
grid = ["rows", "ceil_div(cols, 512)"]
block = [512]
args = ["x", "out", "rows", "cols", "eps"]
*/
// More parallelism for short batches: rows split into 512-column chunks, one block each.
extern "C" __global__ void l2_chunks(const float* x, float* out, int rows, int cols, float eps) {
    __shared__ float red[512];
    const int c = blockIdx.y * 512 + threadIdx.x;
    const float v = c < cols ? x[(size_t)blockIdx.x * cols + c] : 0.0f;
    red[threadIdx.x] = v * v;
    __syncthreads();
    for (int h = 256; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (c < cols) out[(size_t)blockIdx.x * cols + c] = v / fmaxf(sqrtf(red[0]), eps);
}
