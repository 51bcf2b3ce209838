/* mutagym
[[launch]]
kernel = "ce_row_serial"
grid = ["ceil_div(batch, 64)"]
block = [64]
args = ["logits", "labels", "acc", "batch", "classes"]
fill = {acc = 0}

[[launch]]
kernel = "ce_divide"
grid = [1]
block = [1]
args = ["acc", "out", "batch"]

[[scratch]]
name = "acc"
dtype = "float32"
size = "1"
*/
// One thread per sample: the row max, then the row's sum of exp(x - max) in one loop, the loss
// added with an atomic; good for large batches of moderate rows.
#include <stdint.h>

extern "C" __global__ void ce_row_serial(const float* __restrict__ logits, const int64_t* __restrict__ labels,
                                         float* __restrict__ acc, int batch, int classes) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= batch) return;
    const float* xr = logits + (size_t)r * classes;
    float m = -INFINITY;
    for (int j = 0; j < classes; ++j) m = fmaxf(m, xr[j]);
    float s = 0.f;
    for (int j = 0; j < classes; ++j) s += expf(xr[j] - m);
    atomicAdd(acc, (logf(s) + m) - xr[labels[r]]);
}

extern "C" __global__ void ce_divide(const float* __restrict__ acc, float* __restrict__ out, int batch) {
    out[0] = acc[0] / (float)batch;
}
