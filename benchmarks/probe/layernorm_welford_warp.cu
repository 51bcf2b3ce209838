/* mutagym
[[launch]]
kernel = "ln_welford"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// A warp per row; each lane runs Welford's update, lanes merge (count, mean, M2) by shuffles.
extern "C" __global__ void ln_welford(const float* x, const float* weight, const float* bias, float* out,
                                      int rows, int cols, float eps) {
    const int r = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* in = x + (size_t)r * cols;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = in[c];
        n += 1.0f;
        float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    for (int o = 16; o > 0; o >>= 1) {
        float n2 = __shfl_xor_sync(0xffffffffu, n, o);
        float mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
        float q2 = __shfl_xor_sync(0xffffffffu, m2, o);
        float tot = n + n2;
        if (tot > 0.0f) {   // an empty side adds nothing: d * d would overflow past 1.8e19 and times 0 be NaN
            float d = mean2 - mean, w = n * n2 / tot;
            mean += d * (n2 / tot);
            m2 += q2 + (w > 0.0f ? d * d * w : 0.0f);
        }
        n = tot;
    }
    const float inv = rsqrtf(m2 / n + eps);
    for (int c = lane; c < cols; c += 32) out[(size_t)r * cols + c] = (in[c] - mean) * inv * weight[c] + bias[c];
}
