/* mutagym
[[launch]]
kernel = "triplet_gram_rows"
grid = ["batch"]
block = [128]
args = ["anchor", "positive", "negative", "row_loss", "dim", "margin", "eps"]

[[launch]]
kernel = "triplet_average"
grid = [1]
block = [128]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float32"
size = "batch"
*/
// Distances from inner products, as a pairwise-distance GEMM computes them:
// |a - p + eps|^2 = a.a + p.p - 2 a.p + 2 eps (sum a - sum p) + dim eps^2, so one pass over the
// three rows gathers a.a, p.p, n.n, a.p, a.n and the three sums.
#define T 128
#define NQ 8

extern "C" __global__ void triplet_gram_rows(const float* __restrict__ anchor, const float* __restrict__ positive,
                                             const float* __restrict__ negative, float* __restrict__ row_loss,
                                             int dim, float margin, float eps) {
    __shared__ float sh[NQ][T];
    const size_t base = (size_t)blockIdx.x * dim;
    float q[NQ] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int j = threadIdx.x; j < dim; j += T) {
        const float a = anchor[base + j], p = positive[base + j], n = negative[base + j];
        q[0] += a * a; q[1] += p * p; q[2] += n * n;
        q[3] += a * p; q[4] += a * n;
        q[5] += a; q[6] += p; q[7] += n;
    }
    for (int k = 0; k < NQ; ++k) sh[k][threadIdx.x] = q[k];
    __syncthreads();
    for (int s = T / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            for (int k = 0; k < NQ; ++k) sh[k][threadIdx.x] += sh[k][threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const float e2 = dim * eps * eps;
        const float dap2 = sh[0][0] + sh[1][0] - 2.f * sh[3][0] + 2.f * eps * (sh[5][0] - sh[6][0]) + e2;
        const float dan2 = sh[0][0] + sh[2][0] - 2.f * sh[4][0] + 2.f * eps * (sh[5][0] - sh[7][0]) + e2;
        const float loss = sqrtf(fmaxf(dap2, 0.f)) - sqrtf(fmaxf(dan2, 0.f)) + margin;
        row_loss[blockIdx.x] = fmaxf(loss, 0.f);
    }
}

extern "C" __global__ void triplet_average(const float* __restrict__ row_loss, float* __restrict__ out, int batch) {
    __shared__ float sh[T];
    float s = 0.f;
    for (int i = threadIdx.x; i < batch; i += T) s += row_loss[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = sh[0] / batch;
}
