/* mutagym
[[launch]]
kernel = "bn_flat"
grid = ["min(ceil_div(batch * channels * spatial, 512), 4096)"]
block = [512]
args = ["x", "running_mean", "running_var", "weight", "bias", "out", "batch", "channels", "spatial", "eps"]
*/
// Flat grid-stride batchnorm. The channel of element i is (i / spatial) % channels; the quotient
// is taken in float (a division by a float is cheaper than a 32-bit integer division on a GPU).
extern "C" __global__ void bn_flat(const float* __restrict__ x, const float* __restrict__ mean,
                                   const float* __restrict__ var, const float* __restrict__ weight,
                                   const float* __restrict__ bias, float* __restrict__ out,
                                   int batch, int channels, int spatial, float eps) {
    const int total = batch * channels * spatial;
    const float fspatial = (float)spatial;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const int plane = (int)((float)i / fspatial);
        const int c = plane % channels;
        out[i] = (x[i] - mean[c]) * rsqrtf(var[c] + eps) * weight[c] + bias[c];
    }
}
