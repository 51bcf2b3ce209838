/* mutagym
# One launch, one block of 128 threads per row (grid-stride over rows). Each thread computes the
# outputs j = tid, tid + 128, ... of the row as dot products with four interleaved accumulators,
# keeps them in the scratch y, and folds them into a Welford (count, mean, M2) state; states are
# merged across the warp with xor shuffles, then across the 4 warps through shared memory.
[[launch]]
kernel = "linear_layernorm_fused"
grid = ["min(batch, 1024)"]
block = [128]
shared_bytes = 0
args = ["x", "weight", "bias", "gamma", "beta", "out", "y", "batch", "in_features", "out_features", "eps"]

[[scratch]]
name = "y"
dtype = "float32"
size = "batch * out_features"
*/
#define BLOCK 128
#define WARP_SIZE 32
#define NWARPS (BLOCK / WARP_SIZE)
#define FULL_MASK 0xffffffffu

struct Welford {
    float n;
    float mean;
    float m2;
};

__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
    const float n = a.n + b.n;
    if (n == 0.0f) {
        return a;
    }
    const float delta = b.mean - a.mean;
    const float wb = b.n / n;
    Welford r;
    r.n = n;
    r.mean = a.mean + delta * wb;
    r.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
    return r;
}

extern "C" __global__ void linear_layernorm_fused(const float* __restrict__ x,
                                                  const float* __restrict__ weight,
                                                  const float* __restrict__ bias,
                                                  const float* __restrict__ gamma,
                                                  const float* __restrict__ beta,
                                                  float* __restrict__ out, float* __restrict__ y,
                                                  int batch, int in_features, int out_features,
                                                  float eps) {
    __shared__ Welford warp_state[NWARPS];
    __shared__ float row_mean;
    __shared__ float row_rstd;

    const int tid = threadIdx.x;
    const int lane = tid % WARP_SIZE;
    const int warp = tid / WARP_SIZE;

    for (int row = blockIdx.x; row < batch; row += gridDim.x) {
        const float* __restrict__ xr = x + (size_t)row * in_features;
        float* __restrict__ yr = y + (size_t)row * out_features;

        Welford st = {0.0f, 0.0f, 0.0f};
        for (int j = tid; j < out_features; j += BLOCK) {
            const float* __restrict__ wr = weight + (size_t)j * in_features;
            float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
            int p = 0;
            for (; p + 3 < in_features; p += 4) {
                acc0 += xr[p] * wr[p];
                acc1 += xr[p + 1] * wr[p + 1];
                acc2 += xr[p + 2] * wr[p + 2];
                acc3 += xr[p + 3] * wr[p + 3];
            }
            for (; p < in_features; ++p) {
                acc0 += xr[p] * wr[p];
            }
            const float v = ((acc0 + acc1) + (acc2 + acc3)) + bias[j];
            yr[j] = v;
            // Welford update with one sample
            st.n += 1.0f;
            const float d = v - st.mean;
            st.mean += d / st.n;
            st.m2 += d * (v - st.mean);
        }

        for (int mask = WARP_SIZE / 2; mask > 0; mask >>= 1) {
            Welford o;
            o.n = __shfl_xor_sync(FULL_MASK, st.n, mask);
            o.mean = __shfl_xor_sync(FULL_MASK, st.mean, mask);
            o.m2 = __shfl_xor_sync(FULL_MASK, st.m2, mask);
            st = welford_merge(st, o);
        }
        if (lane == 0) {
            warp_state[warp] = st;
        }
        __syncthreads();
        if (tid == 0) {
            Welford t = warp_state[0];
            for (int w = 1; w < NWARPS; ++w) {
                t = welford_merge(t, warp_state[w]);
            }
            row_mean = t.mean;
            row_rstd = rsqrtf(t.m2 / t.n + eps);
        }
        __syncthreads();

        const float mean = row_mean;
        const float rstd = row_rstd;
        float* __restrict__ orow = out + (size_t)row * out_features;
        for (int j = tid; j < out_features; j += BLOCK) {
            orow[j] = (yr[j] - mean) * rstd * gamma[j] + beta[j];   // yr[j] was written by this thread
        }
        __syncthreads();   // row_mean / warp_state are read before the next row rewrites them
    }
}
