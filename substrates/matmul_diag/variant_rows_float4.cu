/* mutagym
# One block per row (grid-stride over rows); float4 loads and stores when the row starts
# 16-byte aligned, with a scalar tail for m % 4, and a scalar loop for unaligned rows.
[[launch]]
kernel = "diag_matmul_rows_vec4"
grid = ["min(n, 1024)"]
block = [128]
shared_bytes = 0
args = ["d", "b", "out", "n", "m"]
*/
extern "C" __global__ void diag_matmul_rows_vec4(const float* __restrict__ d,
                                                 const float* __restrict__ b,
                                                 float* __restrict__ out, int n, int m) {
    for (int row = blockIdx.x; row < n; row += gridDim.x) {
        const float s = d[row];
        const size_t base = (size_t)row * m;
        if ((base & 3) == 0) {
            const float4* __restrict__ b4 = reinterpret_cast<const float4*>(b + base);
            float4* __restrict__ o4 = reinterpret_cast<float4*>(out + base);
            const int m4 = m / 4;
            for (int j = threadIdx.x; j < m4; j += blockDim.x) {
                const float4 v = b4[j];
                o4[j] = make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
            }
            for (int j = 4 * m4 + threadIdx.x; j < m; j += blockDim.x) {
                out[base + j] = s * b[base + j];
            }
        } else {
            for (int j = threadIdx.x; j < m; j += blockDim.x) {
                out[base + j] = s * b[base + j];
            }
        }
    }
}
