/* mutagym
[[launch]]
kernel = "ce_online"
grid = ["ceil_div(batch, 4)"]
block = [128]
args = ["logits", "labels", "out", "batch", "classes"]
fill = {out = 0}
*/
// A warp per sample with an online log-sum-exp: m' = max(m, z), s' = s * exp(m - m') + exp(z - m').
extern "C" __global__ void ce_online(const float* logits, const int64_t* labels, float* out, int batch, int classes) {
    const int b = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (b >= batch) return;
    const float* z = logits + (size_t)b * classes;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < classes; c += 32) {
        float mm = fmaxf(m, z[c]);
        s = s * expf(m - mm) + expf(z[c] - mm);
        m = mm;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        float mm = fmaxf(m, m2);
        s = s * expf(m - mm) + s2 * expf(m2 - mm);
        m = mm;
    }
    if (lane == 0) atomicAdd(out, (m + logf(s) - z[labels[b]]) / batch);
}
