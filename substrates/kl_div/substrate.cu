/* mutagym
# Pass 1: grid-stride over all batch * classes elements (float4 body + scalar tail), block
# reduction, one partial per block. Pass 2: one block sums the partials and divides by batch.
[[launch]]
kernel = "kl_div_partial"
grid = ["min(ceil_div(batch * classes, 2048), 64)"]
block = [256]
args = ["predictions", "targets", "partial", "batch", "classes"]

[[launch]]
kernel = "kl_div_finalize"
grid = [1]
block = [64]
args = ["partial", "out", "batch"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "64"
init = "zero"
*/
#define NUM_PARTIALS 64
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float kl_term(float p, float t) {
    return (t > 0.0f) ? t * (logf(t) - logf(p)) : 0.0f;
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

// Sum over the block; valid in thread 0. blockDim.x must be a multiple of 32.
__device__ __forceinline__ float block_reduce_sum(float v, float* warp_sums) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_reduce_sum(v);
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    const int num_warps = blockDim.x >> 5;
    v = (threadIdx.x < num_warps) ? warp_sums[lane] : 0.0f;
    if (warp == 0) {
        v = warp_reduce_sum(v);
    }
    return v;
}

extern "C" __global__ void kl_div_partial(const float* __restrict__ predictions,
                                          const float* __restrict__ targets,
                                          float* __restrict__ partial, int batch, int classes) {
    __shared__ float warp_sums[32];
    const int n = batch * classes;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;

    const int n4 = n >> 2;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    for (int i = tid; i < n4; i += stride) {
        const float4 p = p4[i];
        const float4 t = t4[i];
        acc += kl_term(p.x, t.x) + kl_term(p.y, t.y) + kl_term(p.z, t.z) + kl_term(p.w, t.w);
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) {
        acc += kl_term(predictions[i], targets[i]);
    }

    acc = block_reduce_sum(acc, warp_sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
    }
}

extern "C" __global__ void kl_div_finalize(const float* __restrict__ partial,
                                           float* __restrict__ out, int batch) {
    __shared__ float warp_sums[32];
    float v = 0.0f;
    for (int i = threadIdx.x; i < NUM_PARTIALS; i += blockDim.x) {
        v += partial[i];
    }
    v = block_reduce_sum(v, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = v / (float)batch;
    }
}
