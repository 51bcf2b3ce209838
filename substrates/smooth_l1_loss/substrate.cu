/* mutagym
# Pass 1: grid-stride smooth-L1 terms (float4 body + scalar tail), one partial per block.
[[launch]]
kernel = "smooth_l1_partial"
grid = ["min(ceil_div(n, 1024), 128)"]
block = [128]
args = ["predictions", "targets", "partial", "n", "beta"]

# Pass 2: one block sums the (at most 128) partials and divides by n.
[[launch]]
kernel = "smooth_l1_finalize"
grid = [1]
block = [128]
args = ["partial", "out", "n"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "128"
init = "zero"
*/
#define NUM_PARTIALS 128
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float smooth_l1_term(float p, float t, float beta) {
    const float z = fabsf(p - t);
    return (z < beta) ? 0.5f * z * z / beta : z - 0.5f * beta;
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

extern "C" __global__ void smooth_l1_partial(const float* __restrict__ predictions,
                                             const float* __restrict__ targets,
                                             float* __restrict__ partial, int n, float beta) {
    __shared__ float warp_sums[32];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;

    const int n4 = n / 4;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    for (int i = tid; i < n4; i += stride) {
        const float4 p = p4[i];
        const float4 t = t4[i];
        acc += smooth_l1_term(p.x, t.x, beta) + smooth_l1_term(p.y, t.y, beta)
             + smooth_l1_term(p.z, t.z, beta) + smooth_l1_term(p.w, t.w, beta);
    }
    for (int i = n4 * 4 + tid; i < n; i += stride) {
        acc += smooth_l1_term(predictions[i], targets[i], beta);
    }

    acc = block_reduce_sum(acc, warp_sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
    }
}

extern "C" __global__ void smooth_l1_finalize(const float* __restrict__ partial,
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
