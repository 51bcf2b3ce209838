/* mutagym
inout = ["x"]

[[launch]]
kernel = "instancenorm_inplace"
grid = ["batch * channels"]
block = [512]
args = ["x", "weight", "bias", "channels", "spatial", "eps"]
*/
// In place: the output starts as a copy of x and the kernel normalises it where it lies. One
// 512-thread block per plane; each thread owns one contiguous chunk of the plane, two passes
// (mean, then the sum of squared deviations) each finished by a shared-memory tree, and only
// after both barriers does each thread overwrite its own chunk, reading every element before it
// writes it.
#define BLOCK 512

__device__ float block_sum(float v, float* sh) {
    const int tid = threadIdx.x;
    sh[tid] = v;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void instancenorm_inplace(float* x, const float* __restrict__ weight,
                                                const float* __restrict__ bias, int channels, int spatial,
                                                float eps) {
    __shared__ float sh[BLOCK];
    const int plane = blockIdx.x;
    float* xp = x + (size_t)plane * spatial;
    const int chunk = (spatial + BLOCK - 1) / BLOCK;
    const int begin = min(spatial, (int)threadIdx.x * chunk), end = min(spatial, begin + chunk);
    float s = 0.0f;
    for (int i = begin; i < end; ++i) s += xp[i];
    const float mean = block_sum(s, sh) / (float)spatial;
    float q = 0.0f;
    for (int i = begin; i < end; ++i) {
        const float d = xp[i] - mean;
        q += d * d;
    }
    const float var = block_sum(q, sh) / (float)spatial;
    const int c = plane % channels;
    const float scale = rsqrtf(var + eps) * weight[c];
    for (int i = begin; i < end; ++i) xp[i] = (xp[i] - mean) * scale + bias[c];
}
