/* mutagym
[[launch]]
kernel = "softmax_online"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// Online softmax: one pass keeps a running maximum m and a sum d of expf(x - m), rescaling d
// whenever m grows; (m, d) pairs merge across threads by
// d = d_a * expf(m_a - m) + d_b * expf(m_b - m). A second pass writes expf(x - m) * (1 / d).
// One 256-thread block per row.
#include <math.h>
#define BLOCK 256
#define WARPS (BLOCK / 32)

// Merge (m_b, d_b) into (m, d). A thread that saw no element holds (-INFINITY, 0): skip the
// expf of (-inf) - (-inf), which is NaN.
__device__ __forceinline__ void merge(float& m, float& d, float m_b, float d_b) {
    const float m_new = fmaxf(m, m_b);
    const float a = (m == -INFINITY) ? 0.0f : d * expf(m - m_new);
    const float b = (m_b == -INFINITY) ? 0.0f : d_b * expf(m_b - m_new);
    m = m_new;
    d = a + b;
}

__device__ __forceinline__ void warp_merge(float& m, float& d) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        float m_b = __shfl_down_sync(0xffffffffu, m, offset);
        float d_b = __shfl_down_sync(0xffffffffu, d, offset);
        merge(m, d, m_b, d_b);
    }
}

extern "C" __global__ void softmax_online(const float* __restrict__ x, float* __restrict__ out,
                                          int rows, int cols) {
    __shared__ float s_m[WARPS];
    __shared__ float s_d[WARPS];
    __shared__ float s_final[2];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float m = -INFINITY;
    float d = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        const float v = xr[c];
        if (v > m) {
            d = d * expf(m - v) + 1.0f;  // expf(-inf) = 0 on the first element
            m = v;
        } else if (m != -INFINITY) {  // a -inf (masked) entry while m is still -inf adds
            d += expf(v - m);          // nothing: expf(-inf - -inf) would be NaN
        }
    }
    warp_merge(m, d);
    if (lane == 0) {
        s_m[warp] = m;
        s_d[warp] = d;
    }
    __syncthreads();
    if (warp == 0) {
        float mw = lane < WARPS ? s_m[lane] : -INFINITY;
        float dw = lane < WARPS ? s_d[lane] : 0.0f;
        warp_merge(mw, dw);
        if (lane == 0) {
            s_final[0] = mw;
            s_final[1] = 1.0f / dw;
        }
    }
    __syncthreads();
    const float row_max = s_final[0];
    const float inv_sum = s_final[1];
    for (int c = tid; c < cols; c += BLOCK) {
        outr[c] = expf(xr[c] - row_max) * inv_sum;
    }
}
