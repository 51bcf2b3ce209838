/* mutagym
[[launch]]
kernel = "conv3x3_tf32"
grid = ["ceil_div(w, 32)", "ceil_div(h, 8)", "batch * out_ch"]
block = [32, 8]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "h", "w"]
*/
// Direct 3x3 convolution, one thread per output pixel, operands rounded to TF32 (10-bit mantissa)
// as a tensor-core implicit GEMM would take them; float accumulation.
__device__ __forceinline__ float tf32(float v) {
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
}

extern "C" __global__ void conv3x3_tf32(const float* __restrict__ x, const float* __restrict__ weight,
                                        const float* __restrict__ bias, float* __restrict__ out,
                                        int in_ch, int out_ch, int h, int w) {
    const int xo = blockIdx.x * 32 + threadIdx.x, yo = blockIdx.y * 8 + threadIdx.y;
    const int bz = blockIdx.z / out_ch, o = blockIdx.z % out_ch;
    if (xo >= w || yo >= h) return;
    float acc = bias[o];
    for (int c = 0; c < in_ch; ++c) {
        const float* xp = x + ((size_t)bz * in_ch + c) * h * w;
        const float* wp = weight + ((size_t)o * in_ch + c) * 9;
        for (int ky = 0; ky < 3; ++ky) {
            const int yi = yo + ky - 1;
            if (yi < 0 || yi >= h) continue;
            for (int kx = 0; kx < 3; ++kx) {
                const int xi = xo + kx - 1;
                if (xi < 0 || xi >= w) continue;
                acc = fmaf(tf32(wp[ky * 3 + kx]), tf32(xp[(size_t)yi * w + xi]), acc);
            }
        }
    }
    out[(((size_t)bz * out_ch + o) * h + yo) * w + xo] = acc;
}
