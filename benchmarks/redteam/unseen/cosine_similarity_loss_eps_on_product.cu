/* mutagym
[[launch]]
kernel = "cosine_warp_rows"
grid = ["ceil_div(batch, 4)"]
block = [128]
args = ["a", "b", "acc", "batch", "dim", "eps"]
fill = {acc = 0}

[[launch]]
kernel = "cosine_finish"
grid = [1]
block = [1]
args = ["acc", "out", "batch"]

[[scratch]]
name = "acc"
dtype = "float32"
size = "1"
*/
// One warp per row; the row's 1 - cos is added to one accumulator with atomicAdd, then divided
// by batch. cos = a.b / max(|a| |b|, eps).
extern "C" __global__ void cosine_warp_rows(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ acc, int batch, int dim, float eps) {
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= batch) return;
    const float* ar = a + (size_t)row * dim;
    const float* br = b + (size_t)row * dim;
    float ab = 0.f, aa = 0.f, bb = 0.f;
    for (int j = lane; j < dim; j += 32) {
        ab = fmaf(ar[j], br[j], ab);
        aa = fmaf(ar[j], ar[j], aa);
        bb = fmaf(br[j], br[j], bb);
    }
    for (int off = 16; off > 0; off >>= 1) {
        ab += __shfl_xor_sync(0xffffffffu, ab, off);
        aa += __shfl_xor_sync(0xffffffffu, aa, off);
        bb += __shfl_xor_sync(0xffffffffu, bb, off);
    }
    if (lane == 0) atomicAdd(acc, 1.0f - ab / fmaxf(sqrtf(aa) * sqrtf(bb), eps));
}

extern "C" __global__ void cosine_finish(const float* __restrict__ acc, float* __restrict__ out, int batch) {
    out[0] = acc[0] / (float)batch;
}
