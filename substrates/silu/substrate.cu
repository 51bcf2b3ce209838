/* mutagym
[[launch]]
kernel = "silu_vec4"
grid = ["min(ceil_div(n, 1024), 1024)"]
block = [256]
args = ["x", "out", "n"]
*/
// SiLU (swish): out[i] = x[i] / (1 + exp(-x[i])), elementwise over n floats.
// Grid-stride loop over float4 groups (buffers start 16-byte aligned), then a scalar tail loop for
// the n % 4 elements after the last full group. The grid is capped at 1024 blocks; every thread
// strides by the whole grid, so any n in range is covered.

__device__ __forceinline__ float silu_op(float v) {
    return v / (1.0f + expf(-v));
}

extern "C" __global__ void silu_vec4(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    const int n4 = n >> 2;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ out4 = reinterpret_cast<float4*>(out);
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = silu_op(v.x);
        v.y = silu_op(v.y);
        v.z = silu_op(v.z);
        v.w = silu_op(v.w);
        out4[i] = v;
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) {
        out[i] = silu_op(x[i]);
    }
}
