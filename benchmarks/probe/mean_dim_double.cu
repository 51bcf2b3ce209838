/* mutagym
[[launch]]
kernel = "mean_f64"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Accumulate in double, reduce in double, divide in double, round once.
extern "C" __global__ void mean_f64(const float* x, float* out, int rows, int cols) {
    __shared__ double s[256];
    double a = 0.0;
    for (int c = threadIdx.x; c < cols; c += 256) a += (double)x[(size_t)blockIdx.x * cols + c];
    s[threadIdx.x] = a;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = (float)(s[0] / (double)cols);
}
