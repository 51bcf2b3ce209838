/* mutagym
[[launch]]
kernel = "l2_rsqrt"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols", "eps"]
*/
// x * rsqrt(sum of squares): one rsqrt per row, multiplies after that.
extern "C" __global__ void l2_rsqrt(const float* x, float* out, int rows, int cols, float eps) {
    __shared__ float red[256];
    const float* in = x + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 256) ss += in[c] * in[c];
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    const float inv = rsqrtf(red[0]);
    for (int c = threadIdx.x; c < cols; c += 256) out[(size_t)blockIdx.x * cols + c] = in[c] * inv;
}
