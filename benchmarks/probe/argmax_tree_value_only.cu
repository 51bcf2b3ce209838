/* mutagym
[[launch]]
kernel = "argmax_tree"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Block per row: each thread keeps the first maximum of its strided columns, then a tree keeps
// the larger value of each pair.
extern "C" __global__ void argmax_tree(const float* x, int64_t* out, int rows, int cols) {
    __shared__ float val[256];
    __shared__ int idx[256];
    const float* row = x + (size_t)blockIdx.x * cols;
    float v = -INFINITY;
    int i = 0;
    for (int c = threadIdx.x; c < cols; c += 256)
        if (row[c] > v) { v = row[c]; i = c; }
    val[threadIdx.x] = v;
    idx[threadIdx.x] = i;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h && val[threadIdx.x + h] > val[threadIdx.x]) {
            val[threadIdx.x] = val[threadIdx.x + h];
            idx[threadIdx.x] = idx[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = idx[0];
}
