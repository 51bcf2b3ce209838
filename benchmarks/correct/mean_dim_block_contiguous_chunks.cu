/* mutagym
[[launch]]
kernel = "mean_rows_chunks"
grid = ["rows"]
block = [512]
args = ["x", "out", "rows", "cols"]
*/
// One 512-thread block per row; each thread sums one contiguous chunk of ceil(cols / 512)
// columns left to right (not a strided slice), the 512 chunk sums meet in a shared-memory tree
// that folds the upper half onto the lower one, and thread 0 divides by cols. Every chunk is a
// sequential float32 sum, so the error order differs from a strided tree.
#define BLOCK 512

extern "C" __global__ void mean_rows_chunks(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    __shared__ float sh[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    const int chunk = (cols + BLOCK - 1) / BLOCK;
    const int begin = min(cols, tid * chunk);
    const int end = min(cols, begin + chunk);
    float s = 0.0f;
    for (int c = begin; c < end; ++c) s += xr[c];
    sh[tid] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    if (tid == 0 && row < rows) out[row] = sh[0] / (float)cols;
}
