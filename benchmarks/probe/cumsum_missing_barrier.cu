/* mutagym
[[launch]]
kernel = "scan_inplace"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
// In-place Hillis-Steele scan of 256-column tiles with a running carry between tiles.
extern "C" __global__ void scan_inplace(const float* x, float* out, int rows, int cols) {
    __shared__ float s[256];
    const int t = threadIdx.x;
    float carry = 0.0f;
    for (int base = 0; base < cols; base += 256) {
        int c = base + t;
        s[t] = c < cols ? x[(size_t)blockIdx.x * cols + c] : 0.0f;
        __syncthreads();
        for (int off = 1; off < 256; off *= 2) {
            float left = t >= off ? s[t - off] : 0.0f;
            s[t] += left;
            __syncthreads();
        }
        if (c < cols) out[(size_t)blockIdx.x * cols + c] = s[t] + carry;
        carry += s[255];
        __syncthreads();
    }
}
