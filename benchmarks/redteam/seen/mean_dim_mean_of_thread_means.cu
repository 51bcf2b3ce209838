/* mutagym
[[launch]]
kernel = "mean_of_means"
grid = ["rows"]
block = [256]
args = ["x", "out", "cols"]
*/
// One block per row. Each thread averages its strided slice (so partials stay O(1) in size), and
// the block averages the thread means of the threads that had elements.
#define T 256

extern "C" __global__ void mean_of_means(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float sm[T];
    __shared__ float sc[T];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float s = 0.f;
    int cnt = 0;
    for (int c = threadIdx.x; c < cols; c += T) { s += xr[c]; ++cnt; }
    sm[threadIdx.x] = cnt ? s / cnt : 0.f;
    sc[threadIdx.x] = cnt ? 1.f : 0.f;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) { sm[threadIdx.x] += sm[threadIdx.x + k]; sc[threadIdx.x] += sc[threadIdx.x + k]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sm[0] / sc[0];
}
