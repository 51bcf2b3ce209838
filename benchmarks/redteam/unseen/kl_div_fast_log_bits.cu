/* mutagym
[[launch]]
kernel = "kl_fastlog_rows"
grid = ["batch"]
block = [128]
args = ["predictions", "targets", "row_kl", "classes"]

[[launch]]
kernel = "kl_fastlog_mean"
grid = [1]
block = [128]
args = ["row_kl", "out", "batch"]

[[scratch]]
name = "row_kl"
dtype = "float32"
size = "batch"
*/
// A fast natural log from the float's bits: exponent from the biased exponent field, mantissa m in
// [1, 2) through ln(m) = 2 artanh((m - 1) / (m + 1)) (odd series to s^9, error below 1e-6).
#define T 128

__device__ __forceinline__ float fast_log(float v) {
    const unsigned int u = __float_as_uint(v);
    const int e = (int)((u >> 23) & 0xffu) - 127;
    const float m = __uint_as_float((u & 0x007fffffu) | 0x3f800000u);
    const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
    const float series = s * (2.0f + s2 * (2.0f / 3.0f + s2 * (0.4f + s2 * (2.0f / 7.0f + s2 * (2.0f / 9.0f)))));
    return (float)e * 0.69314718f + series;
}

extern "C" __global__ void kl_fastlog_rows(const float* __restrict__ p, const float* __restrict__ t,
                                           float* __restrict__ row_kl, int classes) {
    __shared__ float sh[T];
    const size_t base = (size_t)blockIdx.x * classes;
    float s = 0.f;
    for (int j = threadIdx.x; j < classes; j += T) {
        const float tj = t[base + j];
        if (tj > 0.f) s += tj * (fast_log(tj) - fast_log(p[base + j]));
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) row_kl[blockIdx.x] = sh[0];
}

extern "C" __global__ void kl_fastlog_mean(const float* __restrict__ row_kl, float* __restrict__ out, int batch) {
    __shared__ float sh[T];
    float s = 0.f;
    for (int i = threadIdx.x; i < batch; i += T) s += row_kl[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sh[0] / batch;
}
