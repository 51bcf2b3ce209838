/* mutagym
[[launch]]
kernel = "batchnorm_plane"
grid = ["batch * channels"]
block = [128]
shared_bytes = 0
args = ["x", "running_mean", "running_var", "weight", "bias", "out",
        "batch", "channels", "spatial", "eps"]
*/
// One block per (batch, channel) plane. The channel's statistics and weight are folded once into
// scale = weight / sqrt(var + eps), then out = fmaf(x - mean, scale, bias) (float4 loads and
// stores when spatial % 4 == 0 keeps every plane 16-byte aligned).
#include <math.h>

extern "C" __global__ void batchnorm_plane(const float* __restrict__ x,
                                           const float* __restrict__ running_mean,
                                           const float* __restrict__ running_var,
                                           const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ out,
                                           int batch, int channels, int spatial, float eps) {
    const int plane = blockIdx.x;
    if (plane >= batch * channels) {
        return;
    }
    const int c = plane % channels;
    const float scale = weight[c] / sqrtf(running_var[c] + eps);
    const float mean = running_mean[c];
    const float shift = bias[c];
    const float* xp = x + (size_t)plane * spatial;
    float* op = out + (size_t)plane * spatial;
    if ((spatial & 3) == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(xp);
        float4* o4 = reinterpret_cast<float4*>(op);
        for (int i = threadIdx.x; i < spatial / 4; i += blockDim.x) {
            float4 v = x4[i];
            v.x = fmaf(v.x - mean, scale, shift);
            v.y = fmaf(v.y - mean, scale, shift);
            v.z = fmaf(v.z - mean, scale, shift);
            v.w = fmaf(v.w - mean, scale, shift);
            o4[i] = v;
        }
    } else {
        for (int i = threadIdx.x; i < spatial; i += blockDim.x) {
            op[i] = fmaf(xp[i] - mean, scale, shift);
        }
    }
}
