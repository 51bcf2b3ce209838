/* mutagym
# One block of 128 threads per (128-output chunk, channel, batch). The block stages the
# 2 * 128 + 1 input elements its windows cover in shared memory (-INFINITY past the row end),
# synchronises, then each thread takes the max of its three-element window.
[[launch]]
kernel = "maxpool1d_shared"
grid = ["ceil_div((length - 3) // 2 + 1, 128)", "channels", "batch"]
block = [128]
args = ["x", "out", "channels", "length"]
*/
#include <math.h>

#define TILE 128
#define SPAN (2 * TILE + 1)

extern "C" __global__ void maxpool1d_shared(const float* __restrict__ x, float* __restrict__ out,
                                            int channels, int length) {
    __shared__ float seg[SPAN];
    const int out_len = (length - 3) / 2 + 1;
    const size_t row = (size_t)blockIdx.z * channels + blockIdx.y;
    const float* xr = x + row * length;
    const int i0 = blockIdx.x * TILE;
    const int j0 = 2 * i0;
    for (int t = threadIdx.x; t < SPAN; t += blockDim.x) {
        const int j = j0 + t;
        seg[t] = (j < length) ? xr[j] : -INFINITY;
    }
    __syncthreads();
    const int i = i0 + threadIdx.x;
    if (i < out_len) {
        const int t = 2 * threadIdx.x;
        out[row * out_len + i] = fmaxf(fmaxf(seg[t], seg[t + 1]), seg[t + 2]);
    }
}
