/* mutagym
[[launch]]
kernel = "leaky_relu_vec4"
grid = ["min(ceil_div(n, 1024), 1024)"]
block = [256]
args = ["x", "out", "n", "negative_slope"]
*/
// Leaky ReLU: out[i] = x[i] if x[i] >= 0 else negative_slope * x[i], elementwise over n floats.
// Grid-stride loop over float4 groups (buffers start 16-byte aligned), then a scalar tail loop for
// the n % 4 elements after the last full group. The grid is capped at 1024 blocks; every thread
// strides by the whole grid, so any n in range is covered.

__device__ __forceinline__ float leaky_relu_op(float v, float negative_slope) {
    return v >= 0.0f ? v : v * negative_slope;
}

extern "C" __global__ void leaky_relu_vec4(const float* __restrict__ x, float* __restrict__ out, int n, float negative_slope) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    const int n4 = n >> 2;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ out4 = reinterpret_cast<float4*>(out);
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = leaky_relu_op(v.x, negative_slope);
        v.y = leaky_relu_op(v.y, negative_slope);
        v.z = leaky_relu_op(v.z, negative_slope);
        v.w = leaky_relu_op(v.w, negative_slope);
        out4[i] = v;
    }
    for (int i = (n4 << 2) + tid; i < n; i += stride) {
        out[i] = leaky_relu_op(x[i], negative_slope);
    }
}
