/* mutagym
[[launch]]
kernel = "avgpool_flat"
grid = ["min(ceil_div(batch * channels * h * w, 256), 8192)"]
block = [256]
args = ["x", "out", "batch", "channels", "h", "w"]
*/
// Flat grid-stride 3x3 average pool (padding 1, divisor always 9). The (plane, row, column) of a
// flat index come from float quotients (no 32-bit integer divisions).
extern "C" __global__ void avgpool_flat(const float* __restrict__ x, float* __restrict__ out, int batch,
                                        int channels, int h, int w) {
    const int total = batch * channels * h * w;
    const float fw = (float)w, fhw = (float)(h * w);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const int plane = (int)((float)i / fhw);
        const int rem = i - plane * h * w;
        const int yo = (int)((float)rem / fw);
        const int xo = rem - yo * w;
        const float* xp = x + (size_t)plane * h * w;
        float s = 0.f;
        for (int dy = -1; dy <= 1; ++dy) {
            const int yi = yo + dy;
            if (yi < 0 || yi >= h) continue;
            for (int dx = -1; dx <= 1; ++dx) {
                const int xi = xo + dx;
                if (xi >= 0 && xi < w) s += xp[yi * w + xi];
            }
        }
        out[i] = s * (1.0f / 9.0f);
    }
}
