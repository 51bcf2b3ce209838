/* mutagym
[[launch]]
kernel = "mse_last_block"
grid = ["min(ceil_div(n, 256), 512)"]
block = [256]
args = ["predictions", "targets", "out", "n"]
*/
// Single launch: blocks add into a __device__ accumulator; the last block to finish (ticket
// counter) writes the mean and re-arms the counter for the next call.
__device__ float g_total;
__device__ unsigned int g_done;

extern "C" __global__ void mse_last_block(const float* predictions, const float* targets, float* out, int n) {
    __shared__ float red[256];
    __shared__ bool last;
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
    if (threadIdx.x == 0) {
        atomicAdd(&g_total, red[0]);
        __threadfence();
        last = atomicAdd(&g_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        out[0] = atomicAdd(&g_total, 0.0f) / n;
        g_done = 0;
    }
}
