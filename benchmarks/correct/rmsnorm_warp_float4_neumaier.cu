/* mutagym
[[launch]]
kernel = "rmsnorm_warp_vec4"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// One warp per row, four rows per block. The body reads float4 from the first 16-byte aligned
// element of the row (row starts are aligned only when cols % 4 == 0, so the head of 0 to 3
// elements and the tail after the last whole float4 are scalar), sums squares with Neumaier's
// compensation, and the butterfly of xor-shuffles gives every lane the row's sum. The output is
// written with the same head / body / tail split.
__device__ __forceinline__ void neumaier_add(float& s, float& c, float v) {
    const float t = s + v;
    c += (fabsf(s) >= fabsf(v)) ? (s - t) + v : (v - t) + s;
    s = t;
}

extern "C" __global__ void rmsnorm_warp_vec4(const float* __restrict__ x, const float* __restrict__ weight,
                                             float* __restrict__ out, int rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= rows) return;   // whole warps leave
    const size_t base = (size_t)row * cols;
    const float* xr = x + base;
    float* outr = out + base;
    // Elements before the first 16-byte boundary of this row (x itself is 16-byte aligned).
    const int head = min(cols, (int)((4 - (base & 3)) & 3));
    const int body = (cols - head) >> 2;          // whole float4 groups after the head
    const int tail_start = head + 4 * body;
    const float4* x4 = reinterpret_cast<const float4*>(xr + head);
    float s = 0.0f, comp = 0.0f;
    for (int c = lane; c < head; c += 32) neumaier_add(s, comp, xr[c] * xr[c]);
    for (int i = lane; i < body; i += 32) {
        const float4 v = x4[i];
        neumaier_add(s, comp, v.x * v.x);
        neumaier_add(s, comp, v.y * v.y);
        neumaier_add(s, comp, v.z * v.z);
        neumaier_add(s, comp, v.w * v.w);
    }
    for (int c = tail_start + lane; c < cols; c += 32) neumaier_add(s, comp, xr[c] * xr[c]);
    s += comp;
    for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffffffffu, s, mask);
    const float inv = rsqrtf(s / (float)cols + eps);
    for (int c = lane; c < head; c += 32) outr[c] = xr[c] * inv * weight[c];
    for (int i = lane; i < body; i += 32) {
        const float4 v = x4[i];
        const int c = head + 4 * i;
        // weight + c is aligned only when head is 0; read it as scalars.
        reinterpret_cast<float4*>(outr + head)[i] =
            make_float4(v.x * inv * weight[c], v.y * inv * weight[c + 1], v.z * inv * weight[c + 2],
                        v.w * inv * weight[c + 3]);
    }
    for (int c = tail_start + lane; c < cols; c += 32) outr[c] = xr[c] * inv * weight[c];
}
