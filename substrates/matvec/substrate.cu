/* mutagym
# One warp per row, 8 warps per block, a grid-stride loop over rows with the grid capped.
[[launch]]
kernel = "matvec_warp_rows"
grid = ["min(ceil_div(m, 8), 1024)"]
block = [256]
shared_bytes = 0
args = ["a", "x", "out", "m", "k"]
*/
#define WARP_SIZE 32
#define WARPS_PER_BLOCK 8
#define FULL_MASK 0xffffffffu

// Each lane strides over the row (float4 loads when the row starts 16-byte aligned, then a scalar
// tail), and the warp adds its 32 partial sums with a shuffle-down tree; lane 0 writes the row.
extern "C" __global__ void matvec_warp_rows(const float* __restrict__ a,
                                            const float* __restrict__ x,
                                            float* __restrict__ out, int m, int k) {
    const int lane = threadIdx.x % WARP_SIZE;
    const int warp = threadIdx.x / WARP_SIZE;
    const int warp_stride = gridDim.x * WARPS_PER_BLOCK;

    for (int row = blockIdx.x * WARPS_PER_BLOCK + warp; row < m; row += warp_stride) {
        const float* __restrict__ arow = a + (size_t)row * k;
        float sum = 0.0f;
        if ((((size_t)row * k) & 3) == 0) {
            // arow and x are both 16-byte aligned: vector body, then the k % 4 tail
            const float4* __restrict__ a4 = reinterpret_cast<const float4*>(arow);
            const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
            const int k4 = k / 4;
            for (int i = lane; i < k4; i += WARP_SIZE) {
                const float4 av = a4[i];
                const float4 xv = x4[i];
                sum += av.x * xv.x + av.y * xv.y + av.z * xv.z + av.w * xv.w;
            }
            for (int i = 4 * k4 + lane; i < k; i += WARP_SIZE) {
                sum += arow[i] * x[i];
            }
        } else {
            for (int i = lane; i < k; i += WARP_SIZE) {
                sum += arow[i] * x[i];
            }
        }
        for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(FULL_MASK, sum, offset);
        }
        if (lane == 0) {
            out[row] = sum;
        }
    }
}
