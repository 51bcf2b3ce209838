/* mutagym
# One block of 256 threads per row (grid-stride over rows). Thread t computes the features
# j = t, t + 256, ... as dot products (float4 loads when both rows are 16-byte aligned, scalar
# tail), adds bias, applies sigmoid and sums locally; the block then reduces with shuffle-down
# inside each warp and a second shuffle pass over the 8 warp sums.
[[launch]]
kernel = "gemm_sigmoid_sum_rows"
grid = ["min(batch, 1024)"]
block = [256]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "batch", "in_features", "out_features"]
*/
#define BLOCK 256
#define WARP_SIZE 32
#define NWARPS (BLOCK / WARP_SIZE)
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    return v;
}

extern "C" __global__ void gemm_sigmoid_sum_rows(const float* __restrict__ x,
                                                 const float* __restrict__ weight,
                                                 const float* __restrict__ bias,
                                                 float* __restrict__ out, int batch,
                                                 int in_features, int out_features) {
    __shared__ float warp_sums[NWARPS];
    const int tid = threadIdx.x;
    const int lane = tid % WARP_SIZE;
    const int warp = tid / WARP_SIZE;

    for (int row = blockIdx.x; row < batch; row += gridDim.x) {
        const float* __restrict__ xr = x + (size_t)row * in_features;
        const bool x_aligned = (((size_t)row * in_features) & 3) == 0;

        float local = 0.0f;
        for (int j = tid; j < out_features; j += BLOCK) {
            const float* __restrict__ wr = weight + (size_t)j * in_features;
            float dot = 0.0f;
            int p = 0;
            if (x_aligned && (((size_t)j * in_features) & 3) == 0) {
                const float4* __restrict__ x4 = reinterpret_cast<const float4*>(xr);
                const float4* __restrict__ w4 = reinterpret_cast<const float4*>(wr);
                const int n4 = in_features / 4;
                for (int q = 0; q < n4; ++q) {
                    const float4 a = x4[q];
                    const float4 b = w4[q];
                    dot += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
                }
                p = 4 * n4;
            }
            for (; p < in_features; ++p) {
                dot += xr[p] * wr[p];
            }
            local += 1.0f / (1.0f + expf(-(dot + bias[j])));
        }

        local = warp_sum(local);
        if (lane == 0) {
            warp_sums[warp] = local;
        }
        __syncthreads();
        if (warp == 0) {
            float v = lane < NWARPS ? warp_sums[lane] : 0.0f;
            v = warp_sum(v);
            if (lane == 0) {
                out[row] = v;
            }
        }
        __syncthreads();   // warp_sums is read before the next row overwrites it
    }
}
