/* mutagym
[[launch]]
kernel = "mv_warp_vec"
grid = ["ceil_div(m, 4)"]
block = [128]
args = ["a", "x", "out", "m", "k"]
*/
// A warp per row; float4 loads when rows are 16-byte aligned (k % 4 == 0), scalar loads otherwise.
extern "C" __global__ void mv_warp_vec(const float* a, const float* x, float* out, int m, int k) {
    const int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= m) return;
    const float* row = a + (size_t)r * k;
    float s = 0.0f;
    if (k % 4 == 0) {
        const float4* r4 = reinterpret_cast<const float4*>(row);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        for (int q = lane; q < k / 4; q += 32) {
            float4 u = r4[q], v = x4[q];
            s += u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
        }
    } else {
        for (int j = lane; j < k; j += 32) s += row[j] * x[j];
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = s;
}
