/* mutagym
[[launch]]
kernel = "rmsnorm_double"
grid = ["rows"]
block = [128]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// RMSNorm, variant: the sum of squares is accumulated and tree-reduced in double precision, and
// the inverse RMS is computed in double before rounding to float once.
#define RD_BLOCK 128

extern "C" __global__ void rmsnorm_double(const float* __restrict__ x, const float* __restrict__ weight,
                                          float* __restrict__ out, int rows, int cols, float eps) {
    __shared__ double red[RD_BLOCK];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* yr = out + (size_t)row * cols;

    double sq = 0.0;
    for (int c = tid; c < cols; c += RD_BLOCK) {
        const double v = (double)xr[c];
        sq += v * v;
    }
    red[tid] = sq;
    __syncthreads();
    for (int s = RD_BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        __syncthreads();
    }
    const float inv_rms = (float)(1.0 / sqrt(red[0] / (double)cols + (double)eps));

    for (int c = tid; c < cols; c += RD_BLOCK) {
        yr[c] = xr[c] * inv_rms * weight[c];
    }
}
