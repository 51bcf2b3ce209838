/* mutagym
# Variant: one thread per output element in a grid-stride loop, no shared memory; each window
# max starts from -INFINITY and guards every read against the row length.
[[launch]]
kernel = "maxpool1d_k3s2"
grid = ["min(ceil_div(batch * channels * ((length - 3) // 2 + 1), 256), 2048)"]
block = [256]
args = ["x", "out", "batch", "channels", "length"]
*/
#include <math.h>

#define KERNEL 3
#define STRIDE 2

extern "C" __global__ void maxpool1d_k3s2(const float* __restrict__ x, float* __restrict__ out,
                                          int batch, int channels, int length) {
    const int out_len = (length - KERNEL) / STRIDE + 1;
    const int total = batch * channels * out_len;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
        const int i = idx % out_len;
        const int row = idx / out_len;
        const float* xr = x + (size_t)row * length;
        const int start = i * STRIDE;
        float m = -INFINITY;
        for (int k = 0; k < KERNEL; ++k) {
            const int j = start + k;
            if (j < length) {
                m = fmaxf(m, xr[j]);
            }
        }
        out[idx] = m;
    }
}
