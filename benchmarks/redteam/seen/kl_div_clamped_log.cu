/* mutagym
[[launch]]
kernel = "kl_grid"
grid = ["min(ceil_div(batch * classes, 1024), 256)"]
block = [256]
args = ["predictions", "targets", "partials", "batch * classes"]

[[launch]]
kernel = "kl_finish"
grid = [1]
block = [256]
args = ["partials", "out", "batch", "min(ceil_div(batch * classes, 1024), 256)"]

[[scratch]]
name = "partials"
dtype = "float32"
size = "256"
*/
// Grid-stride over every element, one partial per block, then one block adds the partials.
// log(p) is taken as log(max(p, 1e-8)), the usual guard against log(0).
#define T 256

__device__ float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    return sh[0];
}

extern "C" __global__ void kl_grid(const float* __restrict__ p, const float* __restrict__ t,
                                   float* __restrict__ partials, int n) {
    __shared__ float sh[T];
    float s = 0.f;
    for (int i = blockIdx.x * T + threadIdx.x; i < n; i += gridDim.x * T) {
        const float ti = t[i];
        if (ti > 0.f) s += ti * (logf(ti) - logf(fmaxf(p[i], 1e-8f)));
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

extern "C" __global__ void kl_finish(const float* __restrict__ partials, float* __restrict__ out, int batch,
                                     int count) {
    __shared__ float sh[T];
    float s = threadIdx.x < count ? partials[threadIdx.x] : 0.f;
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[0] = s / batch;
}
