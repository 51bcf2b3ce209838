/* mutagym
# Variant: one block of 64 threads per row with Kahan-compensated per-thread sums, a shared-memory
# tree for the three sums, the row term computed with reciprocal clamped norms
# (a.b / max(sqrt(a.a), eps) / max(sqrt(b.b), eps)); a single thread then sums the rows with Kahan.
[[launch]]
kernel = "cosine_rows_tree"
grid = ["batch"]
block = [64]
args = ["a", "b", "row_term", "dim", "eps"]

[[launch]]
kernel = "cosine_mean_serial"
grid = [1]
block = [1]
args = ["row_term", "out", "batch"]

[[scratch]]
name = "row_term"
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

extern "C" __global__ void cosine_rows_tree(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ row_term, int dim, float eps) {
    __shared__ float s_dot[BLOCK];
    __shared__ float s_aa[BLOCK];
    __shared__ float s_bb[BLOCK];
    const int tid = threadIdx.x;
    const float* ra = a + (size_t)blockIdx.x * (size_t)dim;
    const float* rb = b + (size_t)blockIdx.x * (size_t)dim;
    float dot = 0.0f, c_dot = 0.0f, aa = 0.0f, c_aa = 0.0f, bb = 0.0f, c_bb = 0.0f;
    for (int j = tid; j < dim; j += BLOCK) {
        const float x = ra[j];
        const float y = rb[j];
        kahan_add(dot, c_dot, x * y);
        kahan_add(aa, c_aa, x * x);
        kahan_add(bb, c_bb, y * y);
    }
    s_dot[tid] = dot;
    s_aa[tid] = aa;
    s_bb[tid] = bb;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            s_dot[tid] += s_dot[tid + s];
            s_aa[tid] += s_aa[tid + s];
            s_bb[tid] += s_bb[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        const float inv_a = 1.0f / fmaxf(sqrtf(s_aa[0]), eps);
        const float inv_b = 1.0f / fmaxf(sqrtf(s_bb[0]), eps);
        row_term[blockIdx.x] = 1.0f - (s_dot[0] * inv_a) * inv_b;
    }
}

extern "C" __global__ void cosine_mean_serial(const float* __restrict__ row_term,
                                              float* __restrict__ out, int batch) {
    if (threadIdx.x == 0) {
        float sum = 0.0f, comp = 0.0f;
        for (int i = 0; i < batch; ++i) {
            kahan_add(sum, comp, row_term[i]);
        }
        out[0] = sum / (float)batch;
    }
}
