/* mutagym
[[launch]]
kernel = "instancenorm_planes"
grid = ["batch * channels"]
block = [128]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "batch", "channels", "spatial", "eps"]
*/
// One 128-thread block per (batch, channel) plane, two passes for the statistics:
//   mean = sum(x) / spatial, then var = sum((x - mean)^2) / spatial (biased), each a block-wide
//   sum (shuffle-down in every warp, the warp sums through shared memory, a last shuffle);
// then out = (x - mean) * rsqrt(var + eps) * weight[c] + bias[c].
#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

// Block-wide sum; thread 0 publishes it through `result`, which every thread then reads.
__device__ float block_sum(float v, float* warp_buf, float* result) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) {
        warp_buf[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        float t = lane < WARPS ? warp_buf[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) {
            *result = t;
        }
    }
    __syncthreads();
    return *result;
}

extern "C" __global__ void instancenorm_planes(const float* __restrict__ x,
                                               const float* __restrict__ weight,
                                               const float* __restrict__ bias,
                                               float* __restrict__ out, int batch, int channels,
                                               int spatial, float eps) {
    __shared__ float warp_buf[WARPS];
    __shared__ float stat[2];
    const int plane = blockIdx.x;
    const int c = plane % channels;
    const int tid = threadIdx.x;
    const float* xp = x + (size_t)plane * spatial;
    float* op = out + (size_t)plane * spatial;

    float s = 0.0f;
    for (int i = tid; i < spatial; i += BLOCK) {
        s += xp[i];
    }
    const float mean = block_sum(s, warp_buf, &stat[0]) / (float)spatial;

    float sq = 0.0f;
    for (int i = tid; i < spatial; i += BLOCK) {
        const float d = xp[i] - mean;
        sq += d * d;
    }
    const float var = block_sum(sq, warp_buf, &stat[1]) / (float)spatial;

    const float inv_std = rsqrtf(var + eps);
    const float w = weight[c];
    const float b = bias[c];
    for (int i = tid; i < spatial; i += BLOCK) {
        op[i] = (xp[i] - mean) * inv_std * w + b;
    }
}
