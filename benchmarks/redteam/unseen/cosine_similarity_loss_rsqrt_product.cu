/* mutagym
[[launch]]
kernel = "cos_rows"
grid = ["batch"]
block = [256]
args = ["a", "b", "terms", "dim", "eps"]

[[launch]]
kernel = "cos_mean"
grid = [1]
block = [256]
args = ["terms", "out", "batch"]

[[scratch]]
name = "terms"
dtype = "float32"
size = "batch"
*/
// One block per row: a.b, a.a and b.b in one pass, then cos = a.b * rsqrt(a.a * b.b) with the
// squared clamp max(a.a * b.b, eps^2) (one rsqrt instead of two sqrts and a divide).
#define T 256

__device__ float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = T / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void cos_rows(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ terms, int dim, float eps) {
    __shared__ float sh[T];
    const float* ar = a + (size_t)blockIdx.x * dim;
    const float* br = b + (size_t)blockIdx.x * dim;
    float ab = 0.f, aa = 0.f, bb = 0.f;
    for (int j = threadIdx.x; j < dim; j += T) {
        const float u = ar[j], v = br[j];
        ab += u * v;
        aa += u * u;
        bb += v * v;
    }
    ab = block_sum(ab, sh);
    aa = block_sum(aa, sh);
    bb = block_sum(bb, sh);
    if (threadIdx.x == 0) terms[blockIdx.x] = 1.0f - ab * rsqrtf(fmaxf(aa * bb, eps * eps));
}

extern "C" __global__ void cos_mean(const float* __restrict__ terms, float* __restrict__ out, int batch) {
    __shared__ float sh[T];
    float s = 0.f;
    for (int i = threadIdx.x; i < batch; i += T) s += terms[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[0] = s / batch;
}
