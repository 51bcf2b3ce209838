/* mutagym
[[launch]]
kernel = "mse_atomic_warps"
grid = ["min(ceil_div(n, 8192), 512)"]
block = [256]
args = ["predictions", "targets", "out", "n"]
fill = {out = 0}
*/
// Grid-stride threads sum (p - t)^2 in float32, every warp reduces its sum by a shuffle-down
// tree, scales it by 1 / n and adds it to out[0] with one float atomicAdd (out starts at 0):
// thousands of float atomics land in no fixed order.
extern "C" __global__ void mse_atomic_warps(const float* __restrict__ predictions,
                                            const float* __restrict__ targets, float* out, int n) {
    const int stride = gridDim.x * blockDim.x;
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float d = predictions[i] - targets[i];
        s += d * d;
    }
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s / (float)n);
}
