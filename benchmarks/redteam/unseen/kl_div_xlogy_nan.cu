/* mutagym
[[launch]]
kernel = "kl_rows"
grid = ["batch"]
block = [256]
args = ["predictions", "targets", "acc", "classes"]
fill = {acc = 0}

[[launch]]
kernel = "kl_batchmean"
grid = [1]
block = [1]
args = ["acc", "out", "batch"]

[[scratch]]
name = "acc"
dtype = "float32"
size = "1"
*/
// One block per row: sum of t * (log t - log p) over the row, a shared tree, one atomicAdd per row.
#define T 256

extern "C" __global__ void kl_rows(const float* __restrict__ p, const float* __restrict__ t,
                                   float* __restrict__ acc, int classes) {
    __shared__ float sh[T];
    const size_t base = (size_t)blockIdx.x * classes;
    float s = 0.f;
    for (int j = threadIdx.x; j < classes; j += T) {
        const float tj = t[base + j];
        s += tj * (logf(tj) - logf(p[base + j]));
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc, sh[0]);
}

extern "C" __global__ void kl_batchmean(const float* __restrict__ acc, float* __restrict__ out, int batch) {
    out[0] = acc[0] / (float)batch;
}
