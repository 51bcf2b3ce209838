/* mutagym
[[launch]]
kernel = "ln_shifted"
grid = ["rows"]
block = [256]
args = ["x", "weight", "bias", "out", "cols", "eps"]
*/
// One pass for the statistics without the cancellation of E[x^2] - E[x]^2: the moments are taken
// of x - K with the shift K = x[row, 0] (the shifted-data algorithm), so a large common offset of
// the row cancels exactly: var = (S2 - S1^2 / n) / n, mean = K + S1 / n.
#define T 256

__device__ float2 block_sum2(float2 v, float2* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            sh[threadIdx.x].x += sh[threadIdx.x + k].x;
            sh[threadIdx.x].y += sh[threadIdx.x + k].y;
        }
        __syncthreads();
    }
    return sh[0];
}

extern "C" __global__ void ln_shifted(const float* __restrict__ x, const float* __restrict__ weight,
                                      const float* __restrict__ bias, float* __restrict__ out, int cols,
                                      float eps) {
    __shared__ float2 sh[T];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* orow = out + (size_t)blockIdx.x * cols;
    const float K = xr[0];
    float2 acc = make_float2(0.f, 0.f);
    for (int c = threadIdx.x; c < cols; c += T) {
        const float d = xr[c] - K;
        acc.x += d;
        acc.y += d * d;
    }
    const float2 s = block_sum2(acc, sh);
    const float n = (float)cols;
    const float mean = K + s.x / n;
    const float var = fmaxf((s.y - s.x * s.x / n) / n, 0.f);
    const float rstd = rsqrtf(var + eps);
    for (int c = threadIdx.x; c < cols; c += T) orow[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}
