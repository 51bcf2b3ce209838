/* mutagym
# Pass 1: one block per row; two block reductions at once (sum (a - p + eps)^2 and
# sum (a - n + eps)^2), then thread 0 writes max(d_ap - d_an + margin, 0) for the row.
[[launch]]
kernel = "triplet_rows"
grid = ["batch"]
block = [128]
args = ["anchor", "positive", "negative", "row_loss", "dim", "margin", "eps"]

# Pass 2: one block averages the per-row losses.
[[launch]]
kernel = "triplet_mean"
grid = [1]
block = [128]
args = ["row_loss", "out", "batch"]

[[scratch]]
name = "row_loss"
dtype = "float32"
size = "batch"
*/
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

extern "C" __global__ void triplet_rows(const float* __restrict__ anchor,
                                        const float* __restrict__ positive,
                                        const float* __restrict__ negative,
                                        float* __restrict__ row_loss, int dim, float margin, float eps) {
    __shared__ float s_pos[32];
    __shared__ float s_neg[32];
    const size_t offset = (size_t)blockIdx.x * (size_t)dim;
    const float* ra = anchor + offset;
    const float* rp = positive + offset;
    const float* rn = negative + offset;
    float sp = 0.0f, sn = 0.0f;
    for (int j = threadIdx.x; j < dim; j += blockDim.x) {
        const float x = ra[j];
        const float dp = x - rp[j] + eps;
        const float dn = x - rn[j] + eps;
        sp += dp * dp;
        sn += dn * dn;
    }

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    sp = warp_reduce_sum(sp);
    sn = warp_reduce_sum(sn);
    if (lane == 0) {
        s_pos[warp] = sp;
        s_neg[warp] = sn;
    }
    __syncthreads();
    if (warp == 0) {
        const int num_warps = blockDim.x >> 5;
        sp = (lane < num_warps) ? s_pos[lane] : 0.0f;
        sn = (lane < num_warps) ? s_neg[lane] : 0.0f;
        sp = warp_reduce_sum(sp);
        sn = warp_reduce_sum(sn);
        if (lane == 0) {
            row_loss[blockIdx.x] = fmaxf(sqrtf(sp) - sqrtf(sn) + margin, 0.0f);
        }
    }
}

extern "C" __global__ void triplet_mean(const float* __restrict__ row_loss,
                                        float* __restrict__ out, int batch) {
    __shared__ float warp_sums[32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    float s = 0.0f;
    for (int i = threadIdx.x; i < batch; i += blockDim.x) {
        s += row_loss[i];
    }
    s = warp_reduce_sum(s);
    if (lane == 0) {
        warp_sums[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        s = (lane < (int)(blockDim.x >> 5)) ? warp_sums[lane] : 0.0f;
        s = warp_reduce_sum(s);
        if (lane == 0) {
            out[0] = s / (float)batch;
        }
    }
}
