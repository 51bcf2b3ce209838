/* mutagym
# Variant: no shared memory; a grid-stride loop gives each thread whole output pixels, read
# straight from global memory with explicit padding checks, accumulated in double.
[[launch]]
kernel = "conv2d_direct_f64"
grid = ["min(ceil_div(batch * out_ch * h * w, 256), 1024)"]
block = [256]
args = ["x", "weight", "bias", "out", "batch", "in_ch", "out_ch", "h", "w"]
*/
extern "C" __global__ void conv2d_direct_f64(const float* __restrict__ x, const float* __restrict__ weight,
                                             const float* __restrict__ bias, float* __restrict__ out,
                                             int batch, int in_ch, int out_ch, int h, int w) {
    const int total = batch * out_ch * h * w;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
        const int ox = idx % w;
        const int oy = (idx / w) % h;
        const int oc = (idx / (w * h)) % out_ch;
        const int b = idx / (w * h * out_ch);
        double acc = (double)bias[oc];
        for (int ky = 0; ky < 3; ++ky) {
            const int iy = oy + ky - 1;
            if (iy < 0 || iy >= h) {
                continue;
            }
            for (int kx = 0; kx < 3; ++kx) {
                const int ix = ox + kx - 1;
                if (ix < 0 || ix >= w) {
                    continue;
                }
                for (int c = 0; c < in_ch; ++c) {
                    const float xv = x[(((size_t)b * in_ch + c) * h + iy) * w + ix];
                    const float wv = weight[(((size_t)oc * in_ch + c) * 3 + ky) * 3 + kx];
                    acc += (double)wv * (double)xv;
                }
            }
        }
        out[idx] = (float)acc;
    }
}
