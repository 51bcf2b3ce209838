/* mutagym
# Variant: one block of 64 threads per row with Kahan-compensated per-thread sums and a
# shared-memory tree for both squared distances; a single thread then sums the rows with Kahan.
[[launch]]
kernel = "triplet_rows_tree"
grid = ["batch"]
block = [64]
args = ["anchor", "positive", "negative", "row_loss", "dim", "margin", "eps"]

[[launch]]
kernel = "triplet_mean_serial"
grid = [1]
block = [1]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float32"
size = "batch"
*/
#define BLOCK 64

__device__ __forceinline__ void kahan_add(float& sum, float& comp, float value) {
    const float y = value - comp;
    const float t = sum + y;
    comp = (t - sum) - y;
    sum = t;
}

extern "C" __global__ void triplet_rows_tree(const float* __restrict__ anchor,
                                             const float* __restrict__ positive,
                                             const float* __restrict__ negative,
                                             float* __restrict__ row_loss, int dim, float margin, float eps) {
    __shared__ float s_pos[BLOCK];
    __shared__ float s_neg[BLOCK];
    const int tid = threadIdx.x;
    const size_t offset = (size_t)blockIdx.x * (size_t)dim;
    float sp = 0.0f, cp = 0.0f, sn = 0.0f, cn = 0.0f;
    for (int j = tid; j < dim; j += BLOCK) {
        const float x = anchor[offset + j];
        const float dp = (x + eps) - positive[offset + j];
        const float dn = (x + eps) - negative[offset + j];
        kahan_add(sp, cp, dp * dp);
        kahan_add(sn, cn, dn * dn);
    }
    s_pos[tid] = sp;
    s_neg[tid] = sn;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            s_pos[tid] += s_pos[tid + s];
            s_neg[tid] += s_neg[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        row_loss[blockIdx.x] = fmaxf(sqrtf(s_pos[0]) - sqrtf(s_neg[0]) + margin, 0.0f);
    }
}

extern "C" __global__ void triplet_mean_serial(const float* __restrict__ row_loss,
                                               float* __restrict__ out, int batch) {
    if (threadIdx.x == 0) {
        float sum = 0.0f, comp = 0.0f;
        for (int i = 0; i < batch; ++i) {
            kahan_add(sum, comp, row_loss[i]);
        }
        out[0] = sum / (float)batch;
    }
}
