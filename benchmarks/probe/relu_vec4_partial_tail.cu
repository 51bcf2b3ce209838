/* mutagym
[[launch]]
kernel = "relu_v4"
grid = ["min(ceil_div(n, 1024), 512)"]
block = [256]
args = ["x", "out", "n"]
*/
// float4 body with a grid-stride loop; thread 0 cleans up the leftover elements.
extern "C" __global__ void relu_v4(const float* x, float* out, int n) {
    int groups = n / 4;
    const float4* src = reinterpret_cast<const float4*>(x);
    float4* dst = reinterpret_cast<float4*>(out);
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += gridDim.x * blockDim.x) {
        float4 v = src[g];
        dst[g] = make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int base = groups * 4;
        int rem = n - base;
        if (rem > 0) out[base] = fmaxf(x[base], 0.f);
        if (rem > 1) out[base + 1] = fmaxf(x[base + 1], 0.f);
    }
}
