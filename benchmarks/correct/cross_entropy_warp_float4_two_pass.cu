/* mutagym
[[launch]]
kernel = "cross_entropy_warp_vec4"
grid = ["ceil_div(batch, 4)"]
block = [128]
args = ["logits", "labels", "row_loss", "batch", "classes"]

[[launch]]
kernel = "cross_entropy_mean_f64"
grid = [1]
block = [32]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float32"
size = "batch"
*/
// Launch 1: one warp per row, four rows per block, two passes: float4 loads when classes % 4 == 0
// (every row 16-byte aligned), else scalar; the row max and then a Kahan-compensated sum of
// expf(x - m), each finished by an xor-shuffle butterfly; lane 0 writes log(sum) + m - x[label].
// Launch 2: one warp adds the row losses in double (lane-strided, then a shuffle-down tree).
#include <stdint.h>

__device__ __forceinline__ void kahan_add(float& s, float& c, float v) {
    const float y = v - c;
    const float t = s + y;
    c = (t - s) - y;
    s = t;
}

extern "C" __global__ void cross_entropy_warp_vec4(const float* __restrict__ logits,
                                                   const int64_t* __restrict__ labels,
                                                   float* __restrict__ row_loss, int batch, int classes) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= batch) return;   // whole warps leave; no block barrier follows
    const float* xr = logits + (size_t)row * classes;
    const bool vec = (classes & 3) == 0;
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float m = -INFINITY;
    if (vec) {
        for (int i = lane; i < (classes >> 2); i += 32) {
            const float4 v = x4[i];
            m = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
        }
    } else {
        for (int c = lane; c < classes; c += 32) m = fmaxf(m, xr[c]);
    }
    for (int mask = 16; mask > 0; mask >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    float s = 0.0f, comp = 0.0f;
    if (vec) {
        for (int i = lane; i < (classes >> 2); i += 32) {
            const float4 v = x4[i];
            kahan_add(s, comp, expf(v.x - m));
            kahan_add(s, comp, expf(v.y - m));
            kahan_add(s, comp, expf(v.z - m));
            kahan_add(s, comp, expf(v.w - m));
        }
    } else {
        for (int c = lane; c < classes; c += 32) kahan_add(s, comp, expf(xr[c] - m));
    }
    s -= comp;
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if (lane == 0) row_loss[row] = logf(s) + m - xr[labels[row]];
}

extern "C" __global__ void cross_entropy_mean_f64(const float* __restrict__ row_loss, float* __restrict__ out,
                                                  int batch) {
    double s = 0.0;
    for (int i = threadIdx.x; i < batch; i += 32) s += (double)row_loss[i];
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) out[0] = (float)(s / (double)batch);
}
