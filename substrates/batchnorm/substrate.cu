/* mutagym
[[launch]]
kernel = "batchnorm_infer"
grid = ["min(ceil_div(batch * channels * spatial, 256), 2048)"]
block = [256]
shared_bytes = 0
args = ["x", "running_mean", "running_var", "weight", "bias", "out",
        "batch", "channels", "spatial", "eps"]
*/
// Grid-stride loop over every element; each finds its channel from the flat index and applies
// (x - mean) * rsqrt(var + eps) * weight + bias with that channel's statistics.
extern "C" __global__ void batchnorm_infer(const float* __restrict__ x,
                                           const float* __restrict__ running_mean,
                                           const float* __restrict__ running_var,
                                           const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ out,
                                           int batch, int channels, int spatial, float eps) {
    const size_t n = (size_t)batch * channels * spatial;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int c = (int)((i / spatial) % channels);
        const float inv_std = rsqrtf(running_var[c] + eps);
        out[i] = (x[i] - running_mean[c]) * inv_std * weight[c] + bias[c];
    }
}
