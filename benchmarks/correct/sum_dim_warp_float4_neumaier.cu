/* mutagym
[[launch]]
kernel = "sum_rows_neumaier"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
// One warp per row, four rows per block. Lanes read float4 when every row starts 16-byte aligned
// (cols % 4 == 0) and scalars otherwise, and keep a Neumaier-compensated float32 sum (the
// compensation also catches the case |x| > |sum| that plain Kahan loses). The (sum, compensation)
// pairs are folded into one float per lane and reduced with a shuffle-down tree.
__device__ __forceinline__ void neumaier_add(float& sum, float& comp, float v) {
    float t = sum + v;
    if (fabsf(sum) >= fabsf(v)) comp += (sum - t) + v;
    else comp += (v - t) + sum;
    sum = t;
}

extern "C" __global__ void sum_rows_neumaier(const float* __restrict__ x, float* __restrict__ out,
                                             int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * 4 + (threadIdx.x >> 5);
    const bool active = row < rows;   // the whole warp shares the row: no lane leaves early
    const float* xr = x + (size_t)(active ? row : 0) * cols;
    float sum = 0.0f, comp = 0.0f;
    if (active) {
        if ((cols & 3) == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            for (int i = lane; i < (cols >> 2); i += 32) {
                float4 v = x4[i];
                neumaier_add(sum, comp, v.x);
                neumaier_add(sum, comp, v.y);
                neumaier_add(sum, comp, v.z);
                neumaier_add(sum, comp, v.w);
            }
        } else {
            for (int i = lane; i < cols; i += 32) neumaier_add(sum, comp, xr[i]);
        }
    }
    float s = sum + comp;
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0 && active) out[row] = s;
}
