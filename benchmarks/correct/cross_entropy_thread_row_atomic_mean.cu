/* mutagym
[[launch]]
kernel = "cross_entropy_rows_atomic"
grid = ["ceil_div(batch, 64)"]
block = [64]
args = ["logits", "labels", "out", "batch", "classes"]
fill = {out = 0}
*/
// One thread per row, in double: the row maximum, the sum of exp(x - m), loss = log(sum) + m -
// x[label]; each thread adds loss / batch to out[0] with a float atomicAdd (out starts at 0), so
// the mean is accumulated in float32 in whatever order the rows finish.
#include <stdint.h>

extern "C" __global__ void cross_entropy_rows_atomic(const float* __restrict__ logits,
                                                     const int64_t* __restrict__ labels, float* out, int batch,
                                                     int classes) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch) return;
    const float* xr = logits + (size_t)row * classes;
    double m = -INFINITY;
    for (int c = 0; c < classes; ++c) m = fmax(m, (double)xr[c]);
    double s = 0.0;
    for (int c = 0; c < classes; ++c) s += exp((double)xr[c] - m);
    const double loss = log(s) + m - (double)xr[labels[row]];
    atomicAdd(out, (float)(loss / (double)batch));
}
