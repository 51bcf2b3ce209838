/* mutagym
[[launch]]
kernel = "smooth_l1_vec4"
grid = ["min(ceil_div(n, 4096), 256)"]
block = [128]
args = ["predictions", "targets", "acc", "n", "beta"]

[[launch]]
kernel = "smooth_l1_finish"
grid = [1]
block = [1]
args = ["acc", "out", "n"]

[[scratch]]
name = "acc"
dtype = "float32"
size = "1"
init = "zero"
*/
// Launch 1: a grid-stride float4 body over both vectors (they start 16-byte aligned) and a
// scalar tail for the last n % 4 elements; each thread keeps a Neumaier-compensated float32 sum
// of the smooth-L1 terms, each warp adds its lanes by xor-shuffles and one float atomicAdd into
// acc (any order). Launch 2: out = acc / n.
__device__ __forceinline__ float smooth_l1(float p, float t, float beta) {
    const float z = fabsf(p - t);
    return z < beta ? 0.5f * z * z / beta : z - 0.5f * beta;
}

__device__ __forceinline__ void neumaier_add(float& s, float& c, float v) {
    const float t = s + v;
    c += (fabsf(s) >= fabsf(v)) ? (s - t) + v : (v - t) + s;
    s = t;
}

extern "C" __global__ void smooth_l1_vec4(const float* __restrict__ predictions, const float* __restrict__ targets,
                                          float* acc, int n, float beta) {
    const int stride = gridDim.x * blockDim.x;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    float s = 0.0f, comp = 0.0f;
    for (int i = t; i < (n >> 2); i += stride) {
        const float4 p = p4[i], q = t4[i];
        neumaier_add(s, comp, smooth_l1(p.x, q.x, beta));
        neumaier_add(s, comp, smooth_l1(p.y, q.y, beta));
        neumaier_add(s, comp, smooth_l1(p.z, q.z, beta));
        neumaier_add(s, comp, smooth_l1(p.w, q.w, beta));
    }
    for (int i = ((n >> 2) << 2) + t; i < n; i += stride) neumaier_add(s, comp, smooth_l1(predictions[i], targets[i], beta));
    s += comp;
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0) atomicAdd(acc, s);
}

extern "C" __global__ void smooth_l1_finish(const float* __restrict__ acc, float* __restrict__ out, int n) {
    out[0] = acc[0] / (float)n;
}
