/* mutagym
[[launch]]
kernel = "softmax_warp_vec4"
grid = ["ceil_div(rows, 8)"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, eight rows per block, three passes. When cols % 4 == 0 (every row 16-byte
// aligned) lanes load and store float4, otherwise scalars. Pass 1: the row maximum by an
// xor-shuffle butterfly. Pass 2: a Kahan-compensated float32 sum of expf(x - m) per lane, the
// lane sums (with their compensation folded in) reduced by the same butterfly. Pass 3: out.
__device__ __forceinline__ void kahan_add(float& s, float& c, float v) {
    const float y = v - c;
    const float t = s + y;
    c = (t - s) - y;
    s = t;
}

extern "C" __global__ void softmax_warp_vec4(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (row >= rows) return;   // the whole warp leaves together; no block barrier follows
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;
    const bool vec = (cols & 3) == 0;
    const int n4 = cols >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float m = -INFINITY;
    if (vec) {
        for (int i = lane; i < n4; i += 32) {
            const float4 v = x4[i];
            m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        }
    } else {
        for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    }
    for (int mask = 16; mask > 0; mask >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    float s = 0.0f, comp = 0.0f;
    if (vec) {
        for (int i = lane; i < n4; i += 32) {
            const float4 v = x4[i];
            kahan_add(s, comp, expf(v.x - m));
            kahan_add(s, comp, expf(v.y - m));
            kahan_add(s, comp, expf(v.z - m));
            kahan_add(s, comp, expf(v.w - m));
        }
    } else {
        for (int c = lane; c < cols; c += 32) kahan_add(s, comp, expf(xr[c] - m));
    }
    s -= comp;
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    const float inv = 1.0f / s;
    if (vec) {
        float4* o4 = reinterpret_cast<float4*>(outr);
        for (int i = lane; i < n4; i += 32) {
            const float4 v = x4[i];
            o4[i] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv);
        }
    } else {
        for (int c = lane; c < cols; c += 32) outr[c] = expf(xr[c] - m) * inv;
    }
}
