/* mutagym
inout = ["x"]

[[launch]]
kernel = "batchnorm_inplace"
grid = ["ceil_div(spatial, 256)", "channels", "batch"]
block = [256]
args = ["x", "running_mean", "running_var", "weight", "bias", "channels", "spatial", "eps"]
*/
// In place, in double: the output starts as a copy of x; the grid is (spatial tiles, channel,
// batch), so each block knows its channel without a division, and every thread updates one
// element as ((x - mean) / sqrt(var + eps)) * weight + bias evaluated in double, rounded once.
extern "C" __global__ void batchnorm_inplace(float* x, const float* __restrict__ running_mean,
                                             const float* __restrict__ running_var,
                                             const float* __restrict__ weight, const float* __restrict__ bias,
                                             int channels, int spatial, float eps) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= spatial) return;
    const int c = blockIdx.y;
    const size_t i = ((size_t)blockIdx.z * channels + c) * spatial + s;
    const double inv_std = 1.0 / sqrt((double)running_var[c] + (double)eps);
    x[i] = (float)(((double)x[i] - (double)running_mean[c]) * inv_std * (double)weight[c] + (double)bias[c]);
}
