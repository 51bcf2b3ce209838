/* mutagym
[[launch]]
kernel = "layernorm_warp_welford"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// One warp per row, eight rows per block, no shared memory: every lane runs Welford's update
// (count, mean, M2) over its stride-32 slice in float32, the lanes' triples merge with Chan's
// formula along an xor-shuffle butterfly (every lane ends with the row's statistics), and each
// lane writes its slice as (x - mean) * rsqrtf(M2 / cols + eps) * weight + bias.
__device__ __forceinline__ void chan_merge(float& n, float& mean, float& m2, float nb, float meanb, float m2b) {
    const float total = n + nb;
    if (total == 0.0f) return;
    const float delta = meanb - mean;
    const float wb = nb / total;
    mean += delta * wb;
    m2 += m2b + delta * delta * n * wb;
    n = total;
}

extern "C" __global__ void layernorm_warp_welford(const float* __restrict__ x, const float* __restrict__ weight,
                                                  const float* __restrict__ bias, float* __restrict__ out,
                                                  int rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (row >= rows) return;   // whole warps leave; no block barrier
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float v = xr[c];
        n += 1.0f;
        const float delta = v - mean;
        mean += delta / n;
        m2 += delta * (v - mean);
    }
    for (int mask = 1; mask < 32; mask <<= 1) {
        const float nb = __shfl_xor_sync(0xffffffffu, n, mask);
        const float meanb = __shfl_xor_sync(0xffffffffu, mean, mask);
        const float m2b = __shfl_xor_sync(0xffffffffu, m2, mask);
        chan_merge(n, mean, m2, nb, meanb, m2b);
    }
    const float rstd = rsqrtf(fmaxf(m2, 0.0f) / (float)cols + eps);
    for (int c = lane; c < cols; c += 32) outr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}
