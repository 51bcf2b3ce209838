/* mutagym
[[launch]]
kernel = "cumsum_reverse_chunks"
grid = ["rows"]
block = [128]
args = ["x", "out", "cols"]
*/
// One block per row, walking the row from its end in tiles of 128 threads x 4 elements. Thread t
// owns the 4 columns at reversed positions 4t .. 4t + 3 of the tile (counted from the right): a
// sequential suffix scan of its own 4, a Kogge-Stone inclusive scan of the 128 thread totals
// in shared memory (in place, read and write separated by barriers), and the carry of the tiles
// to the right, kept by every thread as a Kahan-compensated float32 sum, added on the way out.
// (A plain float32 carry over the 512 tiles of a 2^18-long row costs a relative error of 0.07
// where suffix sums of a monotone row are small: measured.)
#define BLOCK 128
#define PER 4
#define TILE (BLOCK * PER)

extern "C" __global__ void cumsum_reverse_chunks(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float tot[BLOCK];
    const size_t base = (size_t)blockIdx.x * cols;
    const int tid = threadIdx.x;
    float carry = 0.0f, carry_comp = 0.0f;
    for (int tile = 0; tile < cols; tile += TILE) {
        float v[PER];
        float run = 0.0f;
        for (int j = 0; j < PER; ++j) {
            const int p = tile + tid * PER + j;       // reversed position
            run += p < cols ? x[base + (cols - 1 - p)] : 0.0f;
            v[j] = run;
        }
        tot[tid] = run;
        __syncthreads();
        for (int step = 1; step < BLOCK; step <<= 1) {
            const float add = tid >= step ? tot[tid - step] : 0.0f;
            __syncthreads();
            tot[tid] += add;
            __syncthreads();
        }
        const float before = (carry - carry_comp) + (tid > 0 ? tot[tid - 1] : 0.0f);
        for (int j = 0; j < PER; ++j) {
            const int p = tile + tid * PER + j;
            if (p < cols) out[base + (cols - 1 - p)] = before + v[j];
        }
        const float y = tot[BLOCK - 1] - carry_comp;
        const float t = carry + y;
        carry_comp = (t - carry) - y;
        carry = t;
        __syncthreads();   // tot is rewritten by the next tile
    }
}
