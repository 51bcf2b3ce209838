/* mutagym
[[launch]]
kernel = "argmax_block"
grid = ["rows"]
block = [1024]
args = ["x", "out", "rows", "cols"]
*/
// Block of 1024 per row; every comparison breaks ties on the column index, so the first
// occurrence wins whatever the reduction's shape.
__device__ bool better(float v, int i, float w, int j) { return v > w || (v == w && i < j); }

extern "C" __global__ void argmax_block(const float* x, int64_t* out, int rows, int cols) {
    __shared__ float val[1024];
    __shared__ int pos[1024];
    const int t = threadIdx.x;
    const float* row = x + (size_t)blockIdx.x * cols;
    float v = -INFINITY;
    int p = cols;
    for (int c = t; c < cols; c += 1024)
        if (better(row[c], c, v, p)) { v = row[c]; p = c; }
    val[t] = v;
    pos[t] = p;
    __syncthreads();
    for (int h = 512; h > 0; h >>= 1) {
        if (t < h && better(val[t + h], pos[t + h], val[t], pos[t])) {
            val[t] = val[t + h];
            pos[t] = pos[t + h];
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = pos[0];
}
