/* mutagym
[[launch]]
kernel = "prod_rows"
grid = ["rows"]
block = [64]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 64-thread block per row (rows are short: cols <= 256). Each thread multiplies a strided
// slice starting from the identity 1, then a shared-memory tree multiplies the partial products.
#define BLOCK 64

extern "C" __global__ void prod_rows(const float* __restrict__ x, float* __restrict__ out, int rows,
                                     int cols) {
    __shared__ float partial[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;

    float acc = 1.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        acc *= xr[c];
    }
    partial[tid] = acc;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            partial[tid] *= partial[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0 && row < rows) {
        out[row] = partial[0];
    }
}
