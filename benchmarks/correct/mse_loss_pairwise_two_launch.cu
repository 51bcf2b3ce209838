/* mutagym
[[launch]]
kernel = "mse_chunk_pairwise"
grid = ["ceil_div(n, 4096)"]
block = [256]
args = ["predictions", "targets", "partial", "n"]

[[launch]]
kernel = "mse_partials_pairwise"
grid = [1]
block = [256]
args = ["partial", "out", "ceil_div(n, 4096)", "n"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "ceil_div(n, 4096)"
*/
// Pairwise summation in float32 over two launches. 1: every block owns one contiguous 4096-element
// chunk; each of its threads sums 16 consecutive squared differences left to right, and a
// shared-memory tree adds the 256 sums (a balanced pairwise tree over the chunk). 2: one block
// adds the chunk sums the same way (each thread a contiguous run of partials, then the tree) and
// divides by n.
#define BLOCK 256
#define CHUNK 4096
#define PER (CHUNK / BLOCK)

__device__ float tree_sum(float v, float* sh) {
    const int tid = threadIdx.x;
    sh[tid] = v;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    return sh[0];
}

extern "C" __global__ void mse_chunk_pairwise(const float* __restrict__ predictions,
                                              const float* __restrict__ targets, float* __restrict__ partial,
                                              int n) {
    __shared__ float sh[BLOCK];
    const int first = blockIdx.x * CHUNK + threadIdx.x * PER;
    float s = 0.0f;
    for (int j = 0; j < PER; ++j) {
        const int i = first + j;
        if (i < n) {
            const float d = predictions[i] - targets[i];
            s += d * d;
        }
    }
    const float total = tree_sum(s, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

extern "C" __global__ void mse_partials_pairwise(const float* __restrict__ partial, float* __restrict__ out,
                                                 int chunks, int n) {
    __shared__ float sh[BLOCK];
    const int per = (chunks + BLOCK - 1) / BLOCK;
    const int begin = min(chunks, (int)threadIdx.x * per), end = min(chunks, begin + per);
    float s = 0.0f;
    for (int k = begin; k < end; ++k) s += partial[k];
    const float total = tree_sum(s, sh);
    if (threadIdx.x == 0) out[0] = total / (float)n;
}
