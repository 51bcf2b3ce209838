/* mutagym
[[launch]]
kernel = "l2_norms"
grid = ["rows"]
block = [256]
args = ["x", "norms", "rows", "cols", "eps"]

[[launch]]
kernel = "l2_scale"
grid = ["min(ceil_div(rows * cols, 256), 8192)"]
block = [256]
args = ["x", "norms", "out", "rows", "cols"]

[[scratch]]
name = "norms"
dtype = "float32"
size = "rows"
*/
// Launch 1: each row's divisor (sum of squares in double). Launch 2: a flat grid-stride divide.
extern "C" __global__ void l2_norms(const float* x, float* norms, int rows, int cols, float eps) {
    __shared__ double red[256];
    double ss = 0.0;
    for (int c = threadIdx.x; c < cols; c += 256) {
        double v = x[(size_t)blockIdx.x * cols + c];
        ss += v * v;
    }
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) norms[blockIdx.x] = (float)fmax(sqrt(red[0]), (double)eps);
}

extern "C" __global__ void l2_scale(const float* x, const float* norms, float* out, int rows, int cols) {
    const long long total = (long long)rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
        out[i] = x[i] / norms[i / cols];
}
