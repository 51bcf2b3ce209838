/* mutagym
[[launch]]
kernel = "cumprod_rows"
grid = ["rows"]
block = [32]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One 32-thread block per row (rows are short), walking the row in tiles of 32 elements. Each tile
// is scanned multiplicatively in shared memory by Hillis-Steele with two buffers (one barrier per
// step); the product of the earlier tiles (carry, identity 1) multiplies on the way out.
#define BLOCK 32

extern "C" __global__ void cumprod_rows(const float* __restrict__ x, float* __restrict__ out,
                                        int rows, int cols) {
    __shared__ float buf[2][BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float carry = 1.0f;
    for (int base = 0; base < cols; base += BLOCK) {
        const int c = base + tid;
        buf[0][tid] = c < cols ? xr[c] : 1.0f;  // pad the last tile with the identity
        __syncthreads();
        int src = 0;
        for (int offset = 1; offset < BLOCK; offset <<= 1) {
            float v = buf[src][tid];
            if (tid >= offset) {
                v *= buf[src][tid - offset];
            }
            buf[src ^ 1][tid] = v;
            src ^= 1;
            __syncthreads();
        }
        if (c < cols) {
            outr[c] = carry * buf[src][tid];
        }
        carry *= buf[src][BLOCK - 1];
        __syncthreads();  // everyone has read this tile before the next one overwrites buf[0]
    }
}
