/* mutagym
[[launch]]
kernel = "hinge_vec4_partials"
grid = ["min(ceil_div(n, 8192), 64)"]
block = [256]
args = ["predictions", "targets", "partial", "n"]

[[launch]]
kernel = "hinge_vec4_mean"
grid = [1]
block = [64]
args = ["partial", "out", "min(ceil_div(n, 8192), 64)", "n"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "min(ceil_div(n, 8192), 64)"
*/
// Two launches. 1: a grid-stride float4 body with a scalar n % 4 tail, a Kahan-compensated
// float32 sum per thread, the block's (sum - compensation) values through a shared-memory tree
// into partial[block]. 2: one 64-thread block adds the partials with the same Kahan step
// (thread 0, in order) and divides by n.
#define BLOCK 256

__device__ __forceinline__ void kahan_add(float& s, float& c, float v) {
    const float y = v - c;
    const float t = s + y;
    c = (t - s) - y;
    s = t;
}

__device__ __forceinline__ float hinge(float p, float t) { return fmaxf(0.0f, 1.0f - p * t); }

extern "C" __global__ void hinge_vec4_partials(const float* __restrict__ predictions, const float* __restrict__ targets,
                                               float* __restrict__ partial, int n) {
    __shared__ float sh[BLOCK];
    const int stride = gridDim.x * BLOCK;
    const int t = blockIdx.x * BLOCK + threadIdx.x;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    float s = 0.0f, c = 0.0f;
    for (int i = t; i < (n >> 2); i += stride) {
        const float4 p = p4[i], q = t4[i];
        kahan_add(s, c, hinge(p.x, q.x));
        kahan_add(s, c, hinge(p.y, q.y));
        kahan_add(s, c, hinge(p.z, q.z));
        kahan_add(s, c, hinge(p.w, q.w));
    }
    for (int i = ((n >> 2) << 2) + t; i < n; i += stride) kahan_add(s, c, hinge(predictions[i], targets[i]));
    sh[threadIdx.x] = s - c;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

extern "C" __global__ void hinge_vec4_mean(const float* __restrict__ partial, float* __restrict__ out, int parts,
                                           int n) {
    if (threadIdx.x != 0) return;
    float s = 0.0f, c = 0.0f;
    for (int k = 0; k < parts; ++k) kahan_add(s, c, partial[k]);
    out[0] = (s - c) / (float)n;
}
