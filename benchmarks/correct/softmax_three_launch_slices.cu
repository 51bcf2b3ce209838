/* mutagym
[[launch]]
kernel = "slice_stats"
grid = ["rows * ceil_div(cols, 4096)"]
block = [256]
args = ["x", "slice_max", "slice_sum", "cols", "ceil_div(cols, 4096)"]

[[launch]]
kernel = "row_stats"
grid = ["ceil_div(rows, 128)"]
block = [128]
args = ["slice_max", "slice_sum", "row_max", "row_inv", "rows", "ceil_div(cols, 4096)"]

[[launch]]
kernel = "write_softmax"
grid = ["min(ceil_div(rows * cols, 1024), 8192)"]
block = [256]
args = ["x", "row_max", "row_inv", "out", "rows", "cols"]

[[scratch]]
name = "slice_max"
dtype = "float32"
size = "rows * ceil_div(cols, 4096)"

[[scratch]]
name = "slice_sum"
dtype = "float32"
size = "rows * ceil_div(cols, 4096)"

[[scratch]]
name = "row_max"
dtype = "float32"
size = "rows"

[[scratch]]
name = "row_inv"
dtype = "float32"
size = "rows"
*/
// Three launches through scratch buffers. 1: every 4096-column slice of every row (one block
// each) finds its maximum and its sum of expf(x - slice max) with two shared-memory trees.
// 2: one thread per row merges its slices' (max, sum) pairs: M = max of the slice maxima,
// S = sum of sum_k * expf(max_k - M), and stores M and 1 / S. 3: a grid-stride elementwise pass
// over the flat tensor writes expf(x - M[row]) * (1 / S[row]).
#define SLICE 4096
#define BLOCK 256

extern "C" __global__ void slice_stats(const float* __restrict__ x, float* __restrict__ slice_max,
                                       float* __restrict__ slice_sum, int cols, int slices) {
    __shared__ float sh[BLOCK];
    const int row = blockIdx.x / slices;
    const int begin = (blockIdx.x % slices) * SLICE;
    const int end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    const int tid = threadIdx.x;
    float m = -INFINITY;
    for (int c = begin + tid; c < end; c += BLOCK) m = fmaxf(m, xr[c]);
    sh[tid] = m;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] = fmaxf(sh[tid], sh[tid + half]);
        __syncthreads();
    }
    m = sh[0];
    __syncthreads();   // everyone has read the maximum before sh is reused
    float s = 0.0f;
    if (m != -INFINITY) {
        for (int c = begin + tid; c < end; c += BLOCK) s += expf(xr[c] - m);
    }
    sh[tid] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    if (tid == 0) {
        slice_max[blockIdx.x] = m;
        slice_sum[blockIdx.x] = sh[0];
    }
}

extern "C" __global__ void row_stats(const float* __restrict__ slice_max, const float* __restrict__ slice_sum,
                                     float* __restrict__ row_max, float* __restrict__ row_inv, int rows,
                                     int slices) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* mk = slice_max + (size_t)row * slices;
    const float* sk = slice_sum + (size_t)row * slices;
    float m = -INFINITY;
    for (int k = 0; k < slices; ++k) m = fmaxf(m, mk[k]);
    float s = 0.0f;
    for (int k = 0; k < slices; ++k) {
        if (mk[k] != -INFINITY) s += sk[k] * expf(mk[k] - m);
    }
    row_max[row] = m;
    row_inv[row] = 1.0f / s;
}

extern "C" __global__ void write_softmax(const float* __restrict__ x, const float* __restrict__ row_max,
                                         const float* __restrict__ row_inv, float* __restrict__ out, int rows,
                                         int cols) {
    const size_t n = (size_t)rows * cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / (size_t)cols;
        out[i] = expf(x[i] - row_max[row]) * row_inv[row];
    }
}
