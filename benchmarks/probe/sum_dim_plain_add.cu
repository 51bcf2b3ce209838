/* mutagym
[[launch]]
kernel = "sum_chunks"
grid = ["rows", "ceil_div(cols, 256)"]
block = [256]
args = ["x", "out", "rows", "cols"]
fill = {out = 0}
*/
// Split each row into 256-column chunks, reduce a chunk per block and add it to the row's total.
extern "C" __global__ void sum_chunks(const float* x, float* out, int rows, int cols) {
    __shared__ float acc[256];
    int c = blockIdx.y * 256 + threadIdx.x;
    acc[threadIdx.x] = c < cols ? x[(size_t)blockIdx.x * cols + c] : 0.0f;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) acc[threadIdx.x] += acc[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] += acc[0];
}
