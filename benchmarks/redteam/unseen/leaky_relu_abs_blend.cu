/* mutagym
[[launch]]
kernel = "leaky_blend"
grid = ["ceil_div(n, 512)"]
block = [512]
args = ["x", "out", "n", "negative_slope"]
*/
// leaky_relu(x) = ((1 + s) x + (1 - s) |x|) / 2: the two slopes blended without a branch.
extern "C" __global__ void leaky_blend(const float* __restrict__ x, float* __restrict__ out, int n,
                                       float negative_slope) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    out[i] = 0.5f * ((1.0f + negative_slope) * v + (1.0f - negative_slope) * fabsf(v));
}
