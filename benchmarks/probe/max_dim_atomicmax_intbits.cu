/* mutagym
[[launch]]
kernel = "row_max_split"
grid = ["rows", "ceil_div(cols, 1024)"]
block = [256]
args = ["x", "out", "rows", "cols"]
fill = {out = -inf}
*/
// Each block reduces a 1024-column chunk of its row and publishes it with atomicMax on the
// float's bit pattern (atomicMax has no float overload).
extern "C" __global__ void row_max_split(const float* x, float* out, int rows, int cols) {
    __shared__ float part[256];
    const int start = blockIdx.y * 1024;
    const int stop = min(cols, start + 1024);
    float m = -INFINITY;
    for (int c = start + threadIdx.x; c < stop; c += 256) m = fmaxf(m, x[(size_t)blockIdx.x * cols + c]);
    part[threadIdx.x] = m;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + h]);
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicMax(reinterpret_cast<int*>(out) + blockIdx.x, __float_as_int(part[0]));
}
