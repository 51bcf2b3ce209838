/* mutagym
[[launch]]
kernel = "mean_strided_sample"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// Half the reads: average every other column, which estimates the row mean for smooth data.
extern "C" __global__ void mean_strided_sample(const float* x, float* out, int rows, int cols) {
    __shared__ float acc[256];
    __shared__ int cnt[256];
    float s = 0.0f;
    int k = 0;
    for (int c = 2 * threadIdx.x; c < cols; c += 512) { s += x[(size_t)blockIdx.x * cols + c]; ++k; }
    acc[threadIdx.x] = s;
    cnt[threadIdx.x] = k;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) { acc[threadIdx.x] += acc[threadIdx.x + h]; cnt[threadIdx.x] += cnt[threadIdx.x + h]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = acc[0] / cnt[0];
}
