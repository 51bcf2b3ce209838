/* mutagym
[[launch]]
kernel = "kl_warp_rows_vec4"
grid = ["ceil_div(batch, 8)"]
block = [256]
args = ["predictions", "targets", "row_sum", "batch", "classes"]

[[launch]]
kernel = "kl_batchmean"
grid = [1]
block = [256]
args = ["row_sum", "out", "batch"]

[[scratch]]
name = "row_sum"
dtype = "float32"
size = "batch"
*/
#include <float.h>

// Launch 1: one warp per row, eight rows per block, float4 loads of both tensors when
// classes % 4 == 0 (every row 16-byte aligned), else scalar; each term t * logf(t / p) in float32
// (one log of the ratio instead of two logs: the ratio rounds once, ~6e-8 relative, so the log
// is off by at most ~6e-8 absolute per term; where t / p leaves the normal float range, as for a
// subnormal p, the two logs are taken instead), summed per lane and by an xor-shuffle butterfly.
// Launch 2: one block adds the row sums (strided, then a shared tree) and divides by batch.
__device__ __forceinline__ float kl_term(float p, float t) {
    if (!(t > 0.0f)) return 0.0f;
    const float r = t / p;
    // p == 0 gives r = inf and falls back to logf(t) - logf(0) = +inf: the +inf term.
    const float l = (r >= FLT_MIN && r <= FLT_MAX) ? logf(r) : logf(t) - logf(p);
    return t * l;
}

extern "C" __global__ void kl_warp_rows_vec4(const float* __restrict__ predictions,
                                             const float* __restrict__ targets, float* __restrict__ row_sum,
                                             int batch, int classes) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (row >= batch) return;   // whole warps leave
    const size_t base = (size_t)row * classes;
    const float* pr = predictions + base;
    const float* tr = targets + base;
    float s = 0.0f;
    if ((classes & 3) == 0) {
        const float4* p4 = reinterpret_cast<const float4*>(pr);
        const float4* t4 = reinterpret_cast<const float4*>(tr);
        for (int i = lane; i < (classes >> 2); i += 32) {
            const float4 p = p4[i], t = t4[i];
            s += (kl_term(p.x, t.x) + kl_term(p.y, t.y)) + (kl_term(p.z, t.z) + kl_term(p.w, t.w));
        }
    } else {
        for (int c = lane; c < classes; c += 32) s += kl_term(pr[c], tr[c]);
    }
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if (lane == 0) row_sum[row] = s;
}

extern "C" __global__ void kl_batchmean(const float* __restrict__ row_sum, float* __restrict__ out, int batch) {
    __shared__ float sh[256];
    float s = 0.0f;
    for (int i = threadIdx.x; i < batch; i += 256) s += row_sum[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sh[0] / (float)batch;
}
