/* mutagym
[[launch]]
kernel = "hardsigmoid_vec"
grid = ["ceil_div(ceil_div(n, 4), 128)"]
block = [128]
args = ["x", "out", "n"]
*/
// hardsigmoid(x) = relu6(x + 3) / 6 with relu6(y) = (|y| - |y - 6| + 6) / 2 (no branches), four
// elements per thread.
__device__ __forceinline__ float hsig(float v) {
    const float y = v + 3.0f;
    return (fabsf(y) - fabsf(y - 6.0f) + 6.0f) * (1.0f / 12.0f);
}

extern "C" __global__ void hardsigmoid_vec(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
        if (base + k < n) out[base + k] = hsig(x[base + k]);
    }
}
