/* mutagym
# Pass 1: grid-stride hinge terms (float4 body + scalar tail), block reduction, and one
# atomicAdd per block into a zero-initialised float accumulator.
[[launch]]
kernel = "hinge_accumulate"
grid = ["min(ceil_div(n, 2048), 64)"]
block = [256]
args = ["predictions", "targets", "acc", "n"]

# Pass 2: one thread divides the sum by n.
[[launch]]
kernel = "hinge_write_mean"
grid = [1]
block = [32]
args = ["acc", "out", "n"]

[[scratch]]
name = "acc"
dtype = "float32"
size = "1"
init = "zero"
*/
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float hinge_term(float p, float t) {
    return fmaxf(1.0f - p * t, 0.0f);
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

extern "C" __global__ void hinge_accumulate(const float* __restrict__ predictions,
                                            const float* __restrict__ targets,
                                            float* __restrict__ acc, int n) {
    __shared__ float warp_sums[32];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    float sum = 0.0f;

    const int n4 = n >> 2;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    for (int i = tid; i < n4; i += stride) {
        const float4 p = p4[i];
        const float4 t = t4[i];
        sum += hinge_term(p.x, t.x) + hinge_term(p.y, t.y) + hinge_term(p.z, t.z) + hinge_term(p.w, t.w);
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) {
        sum += hinge_term(predictions[i], targets[i]);
    }

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    sum = warp_reduce_sum(sum);
    if (lane == 0) {
        warp_sums[warp] = sum;
    }
    __syncthreads();
    if (warp == 0) {
        const int num_warps = blockDim.x >> 5;
        sum = (lane < num_warps) ? warp_sums[lane] : 0.0f;
        sum = warp_reduce_sum(sum);
        if (lane == 0) {
            atomicAdd(acc, sum);
        }
    }
}

extern "C" __global__ void hinge_write_mean(const float* __restrict__ acc, float* __restrict__ out, int n) {
    if (threadIdx.x == 0) {
        out[0] = acc[0] / (float)n;
    }
}
