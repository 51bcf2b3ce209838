/* mutagym
# Flat grid-stride loop over the n * m outputs, grid capped at 1024 blocks.
[[launch]]
kernel = "diag_matmul_flat"
grid = ["min(ceil_div(n * m, 256), 1024)"]
block = [256]
shared_bytes = 0
args = ["d", "b", "out", "n", "m"]
*/
extern "C" __global__ void diag_matmul_flat(const float* __restrict__ d,
                                            const float* __restrict__ b,
                                            float* __restrict__ out, int n, int m) {
    const size_t total = (size_t)n * m;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int row = (int)(i / m);
        out[i] = d[row] * b[i];
    }
}
