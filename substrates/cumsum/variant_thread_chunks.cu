/* mutagym
[[launch]]
kernel = "cumsum_rows_chunks"
grid = ["rows"]
block = [128]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row, tiles of 128 threads x 8 consecutive elements. Each thread scans its own 8
// elements sequentially, the 128 thread totals get an exclusive Blelloch scan in shared memory
// (up-sweep, clear the root, down-sweep), and each thread re-adds its elements on top of
// carry + its exclusive offset.
#define BLOCK 128
#define ITEMS 8
#define TILE (BLOCK * ITEMS)

extern "C" __global__ void cumsum_rows_chunks(const float* __restrict__ x, float* __restrict__ out,
                                              int rows, int cols) {
    __shared__ float tree[BLOCK];
    __shared__ float tile_total;
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float carry = 0.0f;
    for (int base = 0; base < cols; base += TILE) {
        const int first = base + tid * ITEMS;
        float vals[ITEMS];
        float local = 0.0f;
        for (int k = 0; k < ITEMS; ++k) {
            const int c = first + k;
            vals[k] = c < cols ? xr[c] : 0.0f;
            local += vals[k];
        }
        tree[tid] = local;
        __syncthreads();
        // up-sweep: tree[i] accumulates the sum of its left subtree
        for (int stride = 1; stride < BLOCK; stride <<= 1) {
            const int i = (tid + 1) * stride * 2 - 1;
            if (i < BLOCK) {
                tree[i] += tree[i - stride];
            }
            __syncthreads();
        }
        if (tid == 0) {
            tile_total = tree[BLOCK - 1];
            tree[BLOCK - 1] = 0.0f;
        }
        __syncthreads();
        // down-sweep: turn the partial sums into an exclusive scan
        for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
            const int i = (tid + 1) * stride * 2 - 1;
            if (i < BLOCK) {
                const float left = tree[i - stride];
                tree[i - stride] = tree[i];
                tree[i] += left;
            }
            __syncthreads();
        }
        float running = carry + tree[tid];
        for (int k = 0; k < ITEMS; ++k) {
            running += vals[k];
            const int c = first + k;
            if (c < cols) {
                outr[c] = running;
            }
        }
        carry += tile_total;
        __syncthreads();  // tree and tile_total are rewritten by the next tile
    }
}
