/* mutagym
[[launch]]
kernel = "rms_stats"
grid = ["rows"]
block = [256]
args = ["x", "rstd", "cols", "eps"]

[[launch]]
kernel = "rms_scale_flat"
grid = ["min(ceil_div(rows * cols, 256), 16384)"]
block = [256]
args = ["x", "weight", "rstd", "out", "rows", "cols"]

[[scratch]]
name = "rstd"
dtype = "float32"
size = "rows"
*/
// Statistics per row, then one flat, fully coalesced scaling pass over rows * cols elements whose
// row comes from a float quotient (no integer division in the hot loop).
#define T 256

extern "C" __global__ void rms_stats(const float* __restrict__ x, float* __restrict__ rstd, int cols, float eps) {
    __shared__ float sh[T];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += T) s = fmaf(xr[c], xr[c], s);
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) rstd[blockIdx.x] = rsqrtf(sh[0] / cols + eps);
}

extern "C" __global__ void rms_scale_flat(const float* __restrict__ x, const float* __restrict__ weight,
                                          const float* __restrict__ rstd, float* __restrict__ out, int rows,
                                          int cols) {
    const int total = rows * cols;
    const float fc = (float)cols;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const int r = (int)((float)i / fc);
        const int c = i - r * cols;
        out[i] = x[i] * rstd[r] * weight[c];
    }
}
