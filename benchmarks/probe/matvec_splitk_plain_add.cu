/* mutagym
[[launch]]
kernel = "mv_split"
grid = ["m", "ceil_div(k, 256)"]
block = [256]
args = ["a", "x", "out", "m", "k"]
fill = {out = 0}
*/
// Split-K: each block multiplies a 256-wide slice of one row and adds it to out[row].
extern "C" __global__ void mv_split(const float* a, const float* x, float* out, int m, int k) {
    __shared__ float prod[256];
    const int j = blockIdx.y * 256 + threadIdx.x;
    prod[threadIdx.x] = j < k ? a[(size_t)blockIdx.x * k + j] * x[j] : 0.0f;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) prod[threadIdx.x] += prod[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = out[blockIdx.x] + prod[0];
}
