/* mutagym
[[launch]]
kernel = "prod_rows_frexp"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, float32 mantissas with a separate integer exponent: every factor and every
// partial product is kept as frexpf's (m, e) with |m| in [0.5, 1), so no intermediate product
// overflows or underflows float32 whatever the grouping; the lanes' (m, e) pairs are multiplied
// by an xor-shuffle butterfly and the row's product is ldexpf(m, e) at the end (its only
// overflow or underflow is the result's own). Zeros stay zero (frexpf(0) = (0, 0)).
__device__ __forceinline__ void mul_normalised(float& m, int& e, float fm, int fe) {
    int k;
    m = frexpf(m * fm, &k);   // |m * fm| in [0.25, 1): exact range, one rounding
    e += fe + k;
}

extern "C" __global__ void prod_rows_frexp(const float* __restrict__ x, float* __restrict__ out,
                                           int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    const bool active = row < rows;
    const float* xr = x + (size_t)(active ? row : 0) * cols;
    float m = 0.5f;   // 1 = 0.5 * 2^1
    int e = 1;
    if (active) {
        for (int c = lane; c < cols; c += 32) {
            int fe;
            float fm = frexpf(xr[c], &fe);
            mul_normalised(m, e, fm, fe);
        }
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, mask);
        int oe = __shfl_xor_sync(0xffffffffu, e, mask);
        mul_normalised(m, e, om, oe);
    }
    if (lane == 0 && active) {
        // ldexpf of a huge negative exponent underflows to 0 and of a huge positive one to inf,
        // as the true product does; clamp e so the int arithmetic inside stays defined.
        out[row] = (m == 0.0f) ? m : ldexpf(m, max(-400, min(400, e)));
    }
}
