/* mutagym
[[launch]]
kernel = "fold_affine"
grid = ["ceil_div(channels, 128)"]
block = [128]
args = ["running_mean", "running_var", "weight", "bias", "affine", "channels", "eps"]

[[launch]]
kernel = "apply_affine"
grid = ["min(ceil_div(batch * channels * spatial, 1024), 8192)"]
block = [256]
args = ["x", "affine", "out", "batch * channels * spatial", "channels", "spatial"]

[[scratch]]
name = "affine"
dtype = "float64"
size = "2 * channels"
*/
// Two launches: the per-channel statistics are folded once into an affine map in double,
// scale = weight / sqrt(var + eps) and shift = bias - mean * scale (scratch), and a grid-stride
// pass evaluates out = x * scale + shift in double. The mean is never subtracted from x in
// float32; the cancellation of x * scale against shift happens in double, where it is harmless.
extern "C" __global__ void fold_affine(const float* __restrict__ running_mean, const float* __restrict__ running_var,
                                       const float* __restrict__ weight, const float* __restrict__ bias,
                                       double* __restrict__ affine, int channels, float eps) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= channels) return;
    const double scale = (double)weight[c] / sqrt((double)running_var[c] + (double)eps);
    affine[2 * c] = scale;
    affine[2 * c + 1] = (double)bias[c] - (double)running_mean[c] * scale;
}

extern "C" __global__ void apply_affine(const float* __restrict__ x, const double* __restrict__ affine,
                                        float* __restrict__ out, long long n, int channels, int spatial) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const int c = (int)((i / spatial) % channels);
        out[i] = (float)((double)x[i] * affine[2 * c] + affine[2 * c + 1]);
    }
}
