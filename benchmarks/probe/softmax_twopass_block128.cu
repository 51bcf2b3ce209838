/* mutagym
[[launch]]
kernel = "softmax_three_sweeps"
grid = ["rows"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// Block of 128 per row, three sweeps over the row: max, sum of exp, normalised write.
__device__ float block_reduce(float v, float* buf, bool is_max) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int h = 64; h > 0; h /= 2) {
        if (threadIdx.x < h) {
            float o = buf[threadIdx.x + h];
            buf[threadIdx.x] = is_max ? fmaxf(buf[threadIdx.x], o) : buf[threadIdx.x] + o;
        }
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax_three_sweeps(const float* x, float* out, int rows, int cols) {
    __shared__ float buf[128];
    const float* in = x + (size_t)blockIdx.x * cols;
    float* o = out + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += 128) m = fmaxf(m, in[c]);
    m = block_reduce(m, buf, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 128) s += expf(in[c] - m);
    s = block_reduce(s, buf, false);
    for (int c = threadIdx.x; c < cols; c += 128) o[c] = expf(in[c] - m) / s;
}
