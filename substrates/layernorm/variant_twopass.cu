/* mutagym
[[launch]]
kernel = "layernorm_twopass_warp"
grid = ["rows"]
block = [256]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// LayerNorm, variant: two passes like the substrate but with 256-thread blocks and butterfly
// warp reductions (__shfl_xor_sync leaves the sum in every lane); each warp's sum goes to shared
// memory and every thread adds the 8 warp sums in the same order, so all agree on mean and rstd.
#define TP_BLOCK 256
#define TP_WARPS (TP_BLOCK / 32)

__device__ __forceinline__ float warp_allreduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void layernorm_twopass_warp(const float* __restrict__ x, const float* __restrict__ weight,
                                                  const float* __restrict__ bias, float* __restrict__ out,
                                                  int rows, int cols, float eps) {
    __shared__ float s_sum[TP_WARPS];
    __shared__ float s_sq[TP_WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;
    float* yr = out + (size_t)row * cols;

    float sum = 0.0f;
    for (int c = tid; c < cols; c += TP_BLOCK) {
        sum += xr[c];
    }
    sum = warp_allreduce_sum(sum);
    if (lane == 0) s_sum[warp] = sum;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < TP_WARPS; ++w) {
        total += s_sum[w];
    }
    const float mean = total / (float)cols;

    float sq = 0.0f;
    for (int c = tid; c < cols; c += TP_BLOCK) {
        const float d = xr[c] - mean;
        sq += d * d;
    }
    sq = warp_allreduce_sum(sq);
    if (lane == 0) s_sq[warp] = sq;  // a second array: no barrier needed before this write
    __syncthreads();
    float total_sq = 0.0f;
    for (int w = 0; w < TP_WARPS; ++w) {
        total_sq += s_sq[w];
    }
    const float rstd = rsqrtf(total_sq / (float)cols + eps);

    for (int c = tid; c < cols; c += TP_BLOCK) {
        const float xhat = (xr[c] - mean) * rstd;
        yr[c] = xhat * weight[c] + bias[c];
    }
}
