/* mutagym
[[launch]]
kernel = "hardtanh_abs"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n", "min_val", "max_val"]
*/
// Branch-free clamp: clamp(x, lo, hi) = (|x - lo| - |x - hi| + lo + hi) / 2, no selects, so the
// warp never diverges.
extern "C" __global__ void hardtanh_abs(const float* __restrict__ x, float* __restrict__ out, int n,
                                        float min_val, float max_val) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        out[i] = 0.5f * (fabsf(v - min_val) - fabsf(v - max_val) + (min_val + max_val));
    }
}
