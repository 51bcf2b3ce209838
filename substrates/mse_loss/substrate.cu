/* mutagym
# Pass 1: grid-stride sum of squared differences (float4 body + scalar tail), one partial per block.
[[launch]]
kernel = "mse_partial"
grid = ["min(ceil_div(n, 2048), 64)"]
block = [256]
args = ["predictions", "targets", "partial", "n"]

# Pass 2: one block sums the (at most 64) partials and divides by n.
[[launch]]
kernel = "mse_finalize"
grid = [1]
block = [64]
args = ["partial", "out", "n"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "64"
init = "zero"
*/
#define NUM_PARTIALS 64
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

// Sum over the block; the result is valid in thread 0. blockDim.x must be a multiple of 32.
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

extern "C" __global__ void mse_partial(const float* __restrict__ predictions,
                                       const float* __restrict__ targets,
                                       float* __restrict__ partial, int n) {
    __shared__ float warp_sums[32];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;

    const int n4 = n >> 2;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    for (int i = tid; i < n4; i += stride) {
        const float4 p = p4[i];
        const float4 t = t4[i];
        const float d0 = p.x - t.x;
        const float d1 = p.y - t.y;
        const float d2 = p.z - t.z;
        const float d3 = p.w - t.w;
        acc += d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) {
        const float d = predictions[i] - targets[i];
        acc += d * d;
    }

    acc = block_reduce_sum(acc, warp_sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
    }
}

extern "C" __global__ void mse_finalize(const float* __restrict__ partial,
                                        float* __restrict__ out, int n) {
    __shared__ float warp_sums[32];
    float v = 0.0f;
    for (int i = threadIdx.x; i < NUM_PARTIALS; i += blockDim.x) {
        v += partial[i];
    }
    v = block_reduce_sum(v, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = v / (float)n;
    }
}
