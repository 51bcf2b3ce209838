/* mutagym
[[launch]]
kernel = "sumsq_atomic_vec4"
grid = ["min(ceil_div(rows * cols, 4096), 1024)"]
block = [256]
args = ["x", "total", "rows * cols"]

[[launch]]
kernel = "scale_vec4"
grid = ["min(ceil_div(rows * cols, 4096), 1024)"]
block = [256]
args = ["x", "total", "out", "rows * cols"]

[[scratch]]
name = "total"
dtype = "float32"
size = "1"
init = "zero"
*/
// Two launches over the flat tensor. 1: a grid-stride float4 body (x starts 16-byte aligned)
// and a scalar tail for the last n % 4 elements; each thread sums squares, each warp reduces by
// xor-shuffles and adds its sum to one float with atomicAdd, in whatever order the warps land.
// 2: out = x * rsqrtf(total) with the same float4 body and scalar tail.
extern "C" __global__ void sumsq_atomic_vec4(const float* __restrict__ x, float* total, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s = 0.0f;
    for (long long i = t; i < (n >> 2); i += stride) {
        const float4 v = x4[i];
        s += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
    }
    for (long long i = ((n >> 2) << 2) + t; i < n; i += stride) s += x[i] * x[i];
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, s);
}

extern "C" __global__ void scale_vec4(const float* __restrict__ x, const float* __restrict__ total,
                                      float* __restrict__ out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float inv = rsqrtf(total[0]);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (long long i = t; i < (n >> 2); i += stride) {
        const float4 v = x4[i];
        o4[i] = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
    }
    for (long long i = ((n >> 2) << 2) + t; i < n; i += stride) out[i] = x[i] * inv;
}
