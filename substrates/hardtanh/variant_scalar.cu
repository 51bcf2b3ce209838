/* mutagym
[[launch]]
kernel = "hardtanh_scalar"
grid = ["min(ceil_div(n, 128), 4096)"]
block = [128]
args = ["x", "out", "n", "min_val", "max_val"]
*/
// Hardtanh, variant: one float per loop trip with 128-thread blocks, and compare-and-select instead of fminf/fmaxf.
// A correct kernel whose rounding differs from the substrate's.

__device__ __forceinline__ float hardtanh_alt(float v, float min_val, float max_val) {
    return v < min_val ? min_val : (v > max_val ? max_val : v);
}

extern "C" __global__ void hardtanh_scalar(const float* __restrict__ x, float* __restrict__ out, int n, float min_val, float max_val) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = hardtanh_alt(x[i], min_val, max_val);
    }
}
