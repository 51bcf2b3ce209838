/* mutagym
# One block of 128 threads per row (grid-stride over rows, grid capped), scalar strided loads,
# then a shared-memory tree reduction with a barrier per level.
[[launch]]
kernel = "matvec_block_rows"
grid = ["min(m, 1024)"]
block = [128]
shared_bytes = 0
args = ["a", "x", "out", "m", "k"]
*/
#define BLOCK 128   // must equal the launch block size (a power of two)

extern "C" __global__ void matvec_block_rows(const float* __restrict__ a,
                                             const float* __restrict__ x,
                                             float* __restrict__ out, int m, int k) {
    __shared__ float red[BLOCK];
    const int tid = threadIdx.x;

    for (int row = blockIdx.x; row < m; row += gridDim.x) {
        const float* __restrict__ arow = a + (size_t)row * k;
        float s = 0.0f;
        for (int i = tid; i < k; i += BLOCK) {
            s += arow[i] * x[i];
        }
        red[tid] = s;
        __syncthreads();
        for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
            if (tid < stride) {
                red[tid] += red[tid + stride];
            }
            __syncthreads();
        }
        if (tid == 0) {
            out[row] = red[0];
        }
        __syncthreads();   // red[0] is read before the next row overwrites red
    }
}
