/* mutagym
[[launch]]
kernel = "mse_atomic"
grid = ["min(ceil_div(n, 512), 2048)"]
block = [512]
args = ["predictions", "targets", "out", "n"]
fill = {out = 0}
*/
// Grid-stride squared errors, a warp-shuffle block reduction, one atomicAdd of sum / n per block.
extern "C" __global__ void mse_atomic(const float* predictions, const float* targets, float* out, int n) {
    __shared__ float warp_sums[16];
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float d = predictions[i] - targets[i];
        s = fmaf(d, d, s);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < 16 ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 8; o > 0; o >>= 1) w += __shfl_down_sync(0xffffffffu, w, o);
        if (threadIdx.x == 0) atomicAdd(out, w / (float)n);
    }
}
