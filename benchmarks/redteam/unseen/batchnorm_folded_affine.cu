/* mutagym
[[launch]]
kernel = "bn_fold"
grid = ["ceil_div(channels, 128)"]
block = [128]
args = ["running_mean", "running_var", "weight", "bias", "coef", "channels", "eps"]

[[launch]]
kernel = "bn_apply"
grid = ["channels", "batch"]
block = [256]
args = ["x", "coef", "out", "channels", "spatial"]

[[scratch]]
name = "coef"
dtype = "float32"
size = "2 * channels"
*/
// Inference batchnorm folded into one multiply-add per element, as deployment stacks do:
// scale = weight / sqrt(var + eps), shift = bias - mean * scale, out = x * scale + shift.
extern "C" __global__ void bn_fold(const float* __restrict__ mean, const float* __restrict__ var,
                                   const float* __restrict__ weight, const float* __restrict__ bias,
                                   float* __restrict__ coef, int channels, float eps) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < channels) {
        const float scale = weight[c] * rsqrtf(var[c] + eps);
        coef[2 * c] = scale;
        coef[2 * c + 1] = bias[c] - mean[c] * scale;
    }
}

extern "C" __global__ void bn_apply(const float* __restrict__ x, const float* __restrict__ coef,
                                    float* __restrict__ out, int channels, int spatial) {
    const int c = blockIdx.x;
    const size_t plane = ((size_t)blockIdx.y * channels + c) * spatial;
    const float scale = coef[2 * c], shift = coef[2 * c + 1];
    for (int s = threadIdx.x; s < spatial; s += blockDim.x)
        out[plane + s] = fmaf(x[plane + s], scale, shift);
}
