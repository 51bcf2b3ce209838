/* mutagym
[[launch]]
kernel = "layernorm_rows"
grid = ["rows"]
block = [128]
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
// LayerNorm over the last dimension: one block per row, two passes over the row.
//   pass 1: mean = sum(x) / cols                  (shared-memory tree reduction)
//   pass 2: var  = sum((x - mean)^2) / cols       (same tree; biased variance)
//   out = (x - mean) * rsqrt(var + eps) * weight[c] + bias[c]
// The block size must be a power of two (the tree halves it); threads stride over the columns,
// so any cols works, including cols < blockDim.
#define LN_BLOCK 128

extern "C" __global__ void layernorm_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                          const float* __restrict__ bias, float* __restrict__ out,
                                          int rows, int cols, float eps) {
    __shared__ float red[LN_BLOCK];
    const int row = blockIdx.x;
    if (row >= rows) return;  // uniform across the block: no thread reaches a barrier alone
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* yr = out + (size_t)row * cols;

    // pass 1: the row mean
    float sum = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        sum += xr[c];
    }
    red[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        __syncthreads();
    }
    const float mean = red[0] / (float)cols;
    __syncthreads();  // every thread has read red[0] before pass 2 overwrites it

    // pass 2: the biased variance around that mean
    float sq = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        const float d = xr[c] - mean;
        sq += d * d;
    }
    red[tid] = sq;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        __syncthreads();
    }
    const float var = red[0] / (float)cols;
    const float rstd = rsqrtf(var + eps);

    // normalise, then the per-column affine transform
    for (int c = tid; c < cols; c += blockDim.x) {
        const float xhat = (xr[c] - mean) * rstd;
        yr[c] = xhat * weight[c] + bias[c];
    }
}
