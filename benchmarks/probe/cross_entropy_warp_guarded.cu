/* mutagym
[[launch]]
kernel = "ce_warp"
grid = ["ceil_div(batch, 8)"]
block = [256]
args = ["logits", "labels", "out", "batch", "classes"]
fill = {out = 0}
*/
// A warp per sample, online log-sum-exp that skips -inf logits and lanes that saw nothing finite.
__device__ __forceinline__ void lse_merge(float& m, float& s, float m2, float s2) {
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) { m = m2; s = s2; return; }
    float mm = fmaxf(m, m2);
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

extern "C" __global__ void ce_warp(const float* logits, const int64_t* labels, float* out, int batch, int classes) {
    const int b = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (b >= batch) return;
    const float* z = logits + (size_t)b * classes;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < classes; c += 32) lse_merge(m, s, z[c], 1.0f);
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        lse_merge(m, s, m2, s2);
    }
    if (lane == 0) atomicAdd(out, (m + logf(s) - z[labels[b]]) / (float)batch);
}
