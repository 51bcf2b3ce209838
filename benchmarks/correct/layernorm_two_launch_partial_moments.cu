/* mutagym
[[launch]]
kernel = "slice_moments"
grid = ["rows * ceil_div(cols, 4096)"]
block = [128]
args = ["x", "moments", "cols", "ceil_div(cols, 4096)"]

[[launch]]
kernel = "normalise_rows"
grid = ["rows"]
block = [128]
args = ["x", "weight", "bias", "moments", "out", "cols", "ceil_div(cols, 4096)", "eps"]

[[scratch]]
name = "moments"
dtype = "float32"
size = "3 * rows * ceil_div(cols, 4096)"
*/
// Two launches through a scratch buffer of per-slice moments. 1: every 4096-column slice of every
// row (one 128-thread block) computes its count, mean and M2 = sum((x - slice mean)^2) by two
// passes over the slice with shared-memory trees, and stores the triple. 2: one block per row
// merges its slices' triples with Chan's formula (every thread in the same order) and writes
// (x - mean) * rsqrt(var + eps) * weight + bias.
#define SLICE 4096
#define BLOCK 128

__device__ float block_sum(float v, float* sh) {
    const int tid = threadIdx.x;
    sh[tid] = v;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void slice_moments(const float* __restrict__ x, float* __restrict__ moments, int cols,
                                         int slices) {
    __shared__ float sh[BLOCK];
    const int row = blockIdx.x / slices;
    const int begin = (blockIdx.x % slices) * SLICE, end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += BLOCK) s += xr[c];
    const float count = (float)(end - begin);
    const float mean = block_sum(s, sh) / count;
    float q = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += BLOCK) {
        const float d = xr[c] - mean;
        q += d * d;
    }
    const float m2 = block_sum(q, sh);
    if (threadIdx.x == 0) {
        moments[3 * (size_t)blockIdx.x] = count;
        moments[3 * (size_t)blockIdx.x + 1] = mean;
        moments[3 * (size_t)blockIdx.x + 2] = m2;
    }
}

extern "C" __global__ void normalise_rows(const float* __restrict__ x, const float* __restrict__ weight,
                                          const float* __restrict__ bias, const float* __restrict__ moments,
                                          float* __restrict__ out, int cols, int slices, float eps) {
    const int row = blockIdx.x;
    const float* mk = moments + 3 * (size_t)row * slices;
    float n = mk[0], mean = mk[1], m2 = mk[2];
    for (int k = 1; k < slices; ++k) {
        const float nb = mk[3 * k], meanb = mk[3 * k + 1], m2b = mk[3 * k + 2];
        const float total = n + nb;
        const float delta = meanb - mean;
        mean += delta * (nb / total);
        m2 += m2b + delta * delta * (n * nb / total);
        n = total;
    }
    const float rstd = rsqrtf(m2 / (float)cols + eps);
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    for (int c = threadIdx.x; c < cols; c += BLOCK) outr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}
