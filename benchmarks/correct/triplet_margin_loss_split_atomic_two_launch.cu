/* mutagym
[[launch]]
kernel = "triplet_slices_atomic"
grid = ["batch", "ceil_div(dim, 2048)"]
block = [128]
args = ["anchor", "positive", "negative", "sq", "dim", "eps"]

[[launch]]
kernel = "triplet_finish"
grid = [1]
block = [256]
args = ["sq", "out", "batch", "margin"]

[[scratch]]
name = "sq"
dtype = "float64"
size = "2 * batch"
init = "zero"
*/
// Split reduction with atomics: every 2048-element slice of a row is a block whose warps sum both
// squared distances (a - p + eps)^2 and (a - n + eps)^2 in float32, reduce them by xor-shuffles
// and add them to the row's two sums with double atomicAdds (any order). One block then forms
// each row's max(sqrt(d_ap) - sqrt(d_an) + margin, 0) in double, sums them in double (strided,
// then a shared tree) and divides by batch. The row sums are double because the loss is a
// difference of two large distances: float32 atomics (hundreds of rounded adds at the sums'
// full magnitude) cost it 1.4e-4 on a 2^18-long row, a thousand times a tree's error.
#define SLICE 2048

extern "C" __global__ void triplet_slices_atomic(const float* __restrict__ anchor, const float* __restrict__ positive,
                                                 const float* __restrict__ negative, double* sq, int dim, float eps) {
    const int row = blockIdx.x;
    const int begin = blockIdx.y * SLICE, end = min(dim, begin + SLICE);
    const size_t base = (size_t)row * dim;
    float sp = 0.0f, sn = 0.0f;
    for (int j = begin + threadIdx.x; j < end; j += blockDim.x) {
        const float x = anchor[base + j];
        const float dp = x - positive[base + j] + eps;
        const float dn = x - negative[base + j] + eps;
        sp += dp * dp;
        sn += dn * dn;
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        sp += __shfl_xor_sync(0xffffffffu, sp, mask);
        sn += __shfl_xor_sync(0xffffffffu, sn, mask);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sq + 2 * row, (double)sp);
        atomicAdd(sq + 2 * row + 1, (double)sn);
    }
}

extern "C" __global__ void triplet_finish(const double* __restrict__ sq, float* __restrict__ out, int batch,
                                          float margin) {
    __shared__ double sh[256];
    double s = 0.0;
    for (int i = threadIdx.x; i < batch; i += 256) s += fmax(sqrt(sq[2 * i]) - sqrt(sq[2 * i + 1]) + (double)margin, 0.0);
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)(sh[0] / (double)batch);
}
