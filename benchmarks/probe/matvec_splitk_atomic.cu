/* mutagym
[[launch]]
kernel = "mv_split_atomic"
grid = ["m", "ceil_div(k, 2048)"]
block = [128]
args = ["a", "x", "out", "m", "k"]
fill = {out = 0}
*/
// Split-K over 2048-wide slices; slice sums meet in out[row] through atomicAdd.
extern "C" __global__ void mv_split_atomic(const float* a, const float* x, float* out, int m, int k) {
    __shared__ float red[128];
    const int j0 = blockIdx.y * 2048, j1 = min(k, j0 + 2048);
    float s = 0.0f;
    for (int j = j0 + threadIdx.x; j < j1; j += 128) s += a[(size_t)blockIdx.x * k + j] * x[j];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(&out[blockIdx.x], red[0]);
}
