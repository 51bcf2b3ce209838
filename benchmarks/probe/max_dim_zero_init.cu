/* mutagym
[[launch]]
kernel = "row_max"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Block-per-row max with a shared-memory tree.
extern "C" __global__ void row_max(const float* x, float* out, int rows, int cols) {
    __shared__ float best[256];
    float m = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[(size_t)blockIdx.x * cols + c]);
    best[threadIdx.x] = m;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) best[threadIdx.x] = fmaxf(best[threadIdx.x], best[threadIdx.x + h]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = best[0];
}
