/* mutagym
[[launch]]
kernel = "hinge_block_means"
grid = ["ceil_div(n, 1024)"]
block = [256]
args = ["predictions", "targets", "means", "n"]

[[launch]]
kernel = "hinge_mean_of_means"
grid = [1]
block = [256]
args = ["means", "out", "ceil_div(n, 1024)"]

[[scratch]]
name = "means"
dtype = "float32"
size = "ceil_div(n, 1024)"
*/
// Each block averages the hinge terms of its 1024 elements (four per thread), and the loss is the
// average of the block means.
#define T 256

__device__ float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void hinge_block_means(const float* __restrict__ p, const float* __restrict__ t,
                                             float* __restrict__ means, int n) {
    __shared__ float sh[T];
    const int base = blockIdx.x * 1024;
    float s = 0.f;
    int count = 0;
    for (int k = 0; k < 4; ++k) {
        const int i = base + k * T + threadIdx.x;
        if (i < n) { s += fmaxf(0.f, 1.f - p[i] * t[i]); ++count; }
    }
    s = block_sum(s, sh);
    const float c = block_sum((float)count, sh);
    if (threadIdx.x == 0) means[blockIdx.x] = s / c;
}

extern "C" __global__ void hinge_mean_of_means(const float* __restrict__ means, float* __restrict__ out,
                                               int blocks) {
    __shared__ float sh[T];
    float s = 0.f;
    for (int b = threadIdx.x; b < blocks; b += T) s += means[b];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[0] = s / blocks;
}
