/* mutagym
[[launch]]
kernel = "diag_scale"
grid = ["min(ceil_div(n * m, 1024), 8192)"]
block = [256]
args = ["d", "b", "out", "n", "m"]
*/
// Flat row scaling, four elements per thread per step. The row of a flat index is found with a
// float division (cheaper than an integer one on the GPU).
extern "C" __global__ void diag_scale(const float* __restrict__ d, const float* __restrict__ b,
                                      float* __restrict__ out, int n, int m) {
    const int total = n * m;
    const float fm = (float)m;
    const int step = gridDim.x * blockDim.x * 4;
    for (int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4; base < total; base += step) {
        for (int k = 0; k < 4 && base + k < total; ++k) {
            const int i = base + k;
            const int row = (int)((float)i / fm);
            out[i] = d[row] * b[i];
        }
    }
}
