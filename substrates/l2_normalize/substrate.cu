/* mutagym
[[launch]]
kernel = "l2_normalize_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols", "eps"]
*/
// One block per row. Sum of squares over a strided slice (float4 loads and stores when
// cols % 4 == 0, so every row starts 16-byte aligned), shuffle-down in each warp, warp sums through
// shared memory, then out = x / max(sqrt(sum), eps).
#include <math.h>
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

extern "C" __global__ void l2_normalize_rows(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols, float eps) {
    __shared__ float warp_sums[WARPS];
    __shared__ float s_denom;
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    const bool vec = (cols & 3) == 0;

    float ss = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < (cols >> 2); i += BLOCK) {
            const float4 v = x4[i];
            ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
    } else {
        for (int c = tid; c < cols; c += BLOCK) {
            const float v = xr[c];
            ss += v * v;
        }
    }
    ss = warp_sum(ss);
    if (lane == 0) {
        warp_sums[warp] = ss;
    }
    __syncthreads();
    if (warp == 0) {
        float t = lane < WARPS ? warp_sums[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) {
            s_denom = fmaxf(sqrtf(t), eps);
        }
    }
    __syncthreads();
    const float denom = s_denom;

    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* o4 = reinterpret_cast<float4*>(outr);
        for (int i = tid; i < (cols >> 2); i += BLOCK) {
            float4 v = x4[i];
            v.x /= denom;
            v.y /= denom;
            v.z /= denom;
            v.w /= denom;
            o4[i] = v;
        }
    } else {
        for (int c = tid; c < cols; c += BLOCK) {
            outr[c] = xr[c] / denom;
        }
    }
}
