/* mutagym
[[launch]]
kernel = "scan_exclusive_rows"
grid = ["rows"]
block = [512]
args = ["x", "out", "cols"]
*/
// One block per row, tiles of 512: an inclusive Hillis-Steele scan in shared memory with the
// running carry, and the exclusive result taken as inclusive - x (one scan serves both).
#define TILE 512

extern "C" __global__ void scan_exclusive_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float buf[2][TILE];
    __shared__ float carry;
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* orow = out + (size_t)blockIdx.x * cols;
    const int t = threadIdx.x;
    if (t == 0) carry = 0.0f;
    __syncthreads();
    for (int base = 0; base < cols; base += TILE) {
        const int c = base + t;
        const float v = (c < cols) ? xr[c] : 0.0f;
        int cur = 0;
        buf[cur][t] = v;
        __syncthreads();
        for (int off = 1; off < TILE; off <<= 1) {
            buf[cur ^ 1][t] = buf[cur][t] + (t >= off ? buf[cur][t - off] : 0.0f);
            cur ^= 1;
            __syncthreads();
        }
        const float inclusive = carry + buf[cur][t];
        if (c < cols) orow[c] = inclusive - v;
        __syncthreads();
        if (t == TILE - 1) carry = inclusive;
        __syncthreads();
    }
}
