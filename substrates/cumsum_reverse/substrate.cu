/* mutagym
[[launch]]
kernel = "cumsum_reverse_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// Suffix sums: the row is read back to front. Position p = 0, 1, ... of the reversed row is
// column cols - 1 - p. One block per row walks the reversed row in tiles of 256 elements; each tile
// is scanned in shared memory by Hillis-Steele with two buffers (one barrier per step), and the
// total of the tiles already done (carry, the columns to the right) is added on the way out.
#define BLOCK 256

extern "C" __global__ void cumsum_reverse_rows(const float* __restrict__ x, float* __restrict__ out,
                                               int rows, int cols) {
    __shared__ float buf[2][BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float carry = 0.0f;
    for (int base = 0; base < cols; base += BLOCK) {
        const int p = base + tid;               // position in the reversed row
        const int c = cols - 1 - p;             // its column
        buf[0][tid] = p < cols ? xr[c] : 0.0f;  // pad the last tile with the identity
        __syncthreads();
        int src = 0;
        for (int offset = 1; offset < BLOCK; offset <<= 1) {
            float v = buf[src][tid];
            if (tid >= offset) {
                v += buf[src][tid - offset];
            }
            buf[src ^ 1][tid] = v;
            src ^= 1;
            __syncthreads();
        }
        if (p < cols) {
            outr[c] = carry + buf[src][tid];
        }
        carry += buf[src][BLOCK - 1];
        __syncthreads();  // everyone has read this tile before the next one overwrites buf[0]
    }
}
