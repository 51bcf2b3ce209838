/* mutagym
[[launch]]
kernel = "conv2d_split_ci"
grid = ["ceil_div(w, 32)", "ceil_div(h, 8)", "batch * out_ch * ceil_div(in_ch, 32)"]
block = [32, 8]
args = ["x", "weight", "bias", "out", "in_ch", "out_ch", "h", "w", "ceil_div(in_ch, 32)"]
fill = {out = 0}
*/
// Split over input channels with atomics: blockIdx.z = (b * out_ch + o) * splits + s covers one
// output plane and the input channels [32 s, 32 s + 32). Each thread reads its 3 x 3 neighbourhood
// of each of its channels straight from global memory (zero outside the image), the split s = 0
// adds the bias, and the partial goes into out with a float atomicAdd (out starts at 0; channel
// groups land in any order). gridDim.z stays below 65,536 for every declared shape (at most
// 16 * 256 * 8 = 32,768).
#define CI_SPLIT 32

extern "C" __global__ void conv2d_split_ci(const float* __restrict__ x, const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* out, int in_ch, int out_ch, int h,
                                           int w, int splits) {
    const int xo = blockIdx.x * blockDim.x + threadIdx.x;
    const int yo = blockIdx.y * blockDim.y + threadIdx.y;
    if (xo >= w || yo >= h) return;
    const int plane = blockIdx.z / splits;   // b * out_ch + o
    const int o = plane % out_ch, b = plane / out_ch;
    const int c0 = (blockIdx.z % splits) * CI_SPLIT, c1 = min(in_ch, c0 + CI_SPLIT);
    float acc = c0 == 0 ? bias[o] : 0.0f;
    for (int c = c0; c < c1; ++c) {
        const float* xp = x + ((size_t)b * in_ch + c) * h * w;
        const float* wk = weight + ((size_t)o * in_ch + c) * 9;
        for (int ky = 0; ky < 3; ++ky) {
            const int yi = yo + ky - 1;
            if (yi < 0 || yi >= h) continue;
            for (int kx = 0; kx < 3; ++kx) {
                const int xi = xo + kx - 1;
                if (xi >= 0 && xi < w) acc += wk[ky * 3 + kx] * xp[(size_t)yi * w + xi];
            }
        }
    }
    atomicAdd(out + (size_t)plane * h * w + (size_t)yo * w + xo, acc);
}
