/* mutagym
[[launch]]
kernel = "cumsum_exclusive_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row, walking the row in tiles of 256 elements. Each tile gets an inclusive
// Hillis-Steele scan in shared memory (two buffers, one barrier per step); the exclusive value of
// element tid is the inclusive value of tid - 1 (0 for the tile's first element), plus the total of
// the earlier tiles (carry).
#define BLOCK 256

extern "C" __global__ void cumsum_exclusive_rows(const float* __restrict__ x,
                                                 float* __restrict__ out, int rows, int cols) {
    __shared__ float buf[2][BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float carry = 0.0f;
    for (int base = 0; base < cols; base += BLOCK) {
        const int c = base + tid;
        buf[0][tid] = c < cols ? xr[c] : 0.0f;  // pad the last tile with the identity
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
        if (c < cols) {
            outr[c] = carry + (tid > 0 ? buf[src][tid - 1] : 0.0f);
        }
        carry += buf[src][BLOCK - 1];
        __syncthreads();  // everyone has read this tile before the next one overwrites buf[0]
    }
}
