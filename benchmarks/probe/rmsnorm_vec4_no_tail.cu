/* mutagym
[[launch]]
kernel = "rms_vec4"
grid = ["rows"]
block = [256]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// float4 loads and stores over the row (hidden sizes are multiples of 4).
extern "C" __global__ void rms_vec4(const float* x, const float* weight, float* out, int rows, int cols, float eps) {
    __shared__ float red[256];
    const int quads = cols / 4;
    const float4* in = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    const float4* w4 = reinterpret_cast<const float4*>(weight);
    float4* o4 = reinterpret_cast<float4*>(out + (size_t)blockIdx.x * cols);
    float ss = 0.0f;
    for (int q = threadIdx.x; q < quads; q += 256) {
        float4 v = in[q];
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    const float scale = rsqrtf(red[0] / cols + eps);
    for (int q = threadIdx.x; q < quads; q += 256) {
        float4 v = in[q], w = w4[q];
        o4[q] = make_float4(v.x * scale * w.x, v.y * scale * w.y, v.z * scale * w.z, v.w * scale * w.w);
    }
}
