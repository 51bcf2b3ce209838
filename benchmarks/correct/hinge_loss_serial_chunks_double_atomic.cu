/* mutagym
[[launch]]
kernel = "hinge_chunks"
grid = ["ceil_div(n, 32768)"]
block = [128]
args = ["predictions", "targets", "acc", "n"]

[[launch]]
kernel = "hinge_finish"
grid = [1]
block = [1]
args = ["acc", "out", "n"]

[[scratch]]
name = "acc"
dtype = "float64"
size = "1"
init = "zero"
*/
// Sequential per thread, then a tree: every thread of a block owns 256 consecutive elements
// (a contiguous chunk, not a strided slice) and sums its hinge terms max(0, 1 - p * t) left to
// right in float32; the block's 128 chunk sums go through an xor-shuffle butterfly and a
// shared stage, and thread 0 adds the block sum to a double accumulator with a double atomicAdd
// (any order). A second launch writes acc / n.
#define PER 256
#define BLOCK 128

extern "C" __global__ void hinge_chunks(const float* __restrict__ predictions, const float* __restrict__ targets,
                                        double* acc, int n) {
    __shared__ float warp_sum[BLOCK / 32];
    const int first = (blockIdx.x * BLOCK + threadIdx.x) * PER;
    const int last = min(n, first + PER);
    float s = 0.0f;
    for (int i = first; i < last; ++i) s += fmaxf(0.0f, 1.0f - predictions[i] * targets[i]);
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double b = 0.0;
        for (int w = 0; w < BLOCK / 32; ++w) b += warp_sum[w];
        atomicAdd(acc, b);
    }
}

extern "C" __global__ void hinge_finish(const double* __restrict__ acc, float* __restrict__ out, int n) {
    out[0] = (float)(acc[0] / (double)n);
}
