/* mutagym
[[launch]]
kernel = "smooth_l1_sum"
grid = ["min(ceil_div(n, 512), 256)"]
block = [256]
args = ["predictions", "targets", "acc", "n", "beta"]
fill = {acc = 0}

[[launch]]
kernel = "smooth_l1_div"
grid = [1]
block = [1]
args = ["acc", "out", "n"]

[[scratch]]
name = "acc"
dtype = "float32"
size = "1"
*/
// Both branches of the Huber loss are computed and blended with a 0/1 mask instead of a select
// (no divergence): l = m * 0.5 z^2 / beta + (1 - m) * (z - 0.5 beta), m = (z < beta).
extern "C" __global__ void smooth_l1_sum(const float* __restrict__ p, const float* __restrict__ t,
                                         float* __restrict__ acc, int n, float beta) {
    __shared__ float sh[256];
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float z = fabsf(p[i] - t[i]);
        const float m = (float)(z < beta);
        s += m * (0.5f * z * z / beta) + (1.0f - m) * (z - 0.5f * beta);
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc, sh[0]);
}

extern "C" __global__ void smooth_l1_div(const float* __restrict__ acc, float* __restrict__ out, int n) {
    out[0] = acc[0] / (float)n;
}
