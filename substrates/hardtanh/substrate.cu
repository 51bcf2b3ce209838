/* mutagym
[[launch]]
kernel = "hardtanh_vec4"
grid = ["min(ceil_div(n, 1024), 1024)"]
block = [256]
args = ["x", "out", "n", "min_val", "max_val"]
*/
// Hardtanh: out[i] = min(max(x[i], min_val), max_val), elementwise over n floats.
// Grid-stride loop over float4 groups (buffers start 16-byte aligned), then a scalar tail loop for
// the n % 4 elements after the last full group. The grid is capped at 1024 blocks; every thread
// strides by the whole grid, so any n in range is covered.

__device__ __forceinline__ float hardtanh_op(float v, float min_val, float max_val) {
    return fminf(fmaxf(v, min_val), max_val);
}

extern "C" __global__ void hardtanh_vec4(const float* __restrict__ x, float* __restrict__ out, int n, float min_val, float max_val) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    const int n4 = n >> 2;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ out4 = reinterpret_cast<float4*>(out);
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = hardtanh_op(v.x, min_val, max_val);
        v.y = hardtanh_op(v.y, min_val, max_val);
        v.z = hardtanh_op(v.z, min_val, max_val);
        v.w = hardtanh_op(v.w, min_val, max_val);
        out4[i] = v;
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) {
        out[i] = hardtanh_op(x[i], min_val, max_val);
    }
}
