/* mutagym
[[launch]]
kernel = "mse_blocks"
grid = ["min(ceil_div(n, 256), 1024)"]
block = [256]
args = ["predictions", "targets", "out", "n"]
fill = {out = 0}
*/
// Block partial sums of squared errors, added into the scalar result by each block's thread 0.
extern "C" __global__ void mse_blocks(const float* predictions, const float* targets, float* out, int n) {
    __shared__ float red[256];
    float s = 0.0f;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) {
        float d = predictions[i] - targets[i];
        s += d * d;
    }
    red[threadIdx.x] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] += red[0] / n;
}
