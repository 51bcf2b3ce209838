/* mutagym
[[launch]]
kernel = "mean_partials"
grid = ["rows", "ceil_div(cols, 2048)"]
block = [256]
args = ["x", "partial", "rows", "cols"]

[[launch]]
kernel = "mean_finish"
grid = ["ceil_div(rows, 128)"]
block = [128]
args = ["partial", "out", "rows", "cols"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "rows * ceil_div(cols, 2048)"
*/
// Two launches: per-slice partial sums into scratch, then one thread per row adds its slices.
extern "C" __global__ void mean_partials(const float* x, float* partial, int rows, int cols) {
    __shared__ float s[256];
    int c0 = blockIdx.y * 2048, c1 = min(cols, c0 + 2048);
    float a = 0.0f;
    for (int c = c0 + threadIdx.x; c < c1; c += 256) a += x[(size_t)blockIdx.x * cols + c];
    s[threadIdx.x] = a;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[(size_t)blockIdx.x * gridDim.y + blockIdx.y] = s[0];
}

extern "C" __global__ void mean_finish(const float* partial, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int slices = (cols + 2047) / 2048;
    float a = 0.0f;
    for (int k = 0; k < slices; ++k) a += partial[(size_t)r * slices + k];
    out[r] = a / (float)cols;
}
