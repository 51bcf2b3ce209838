/* mutagym
[[launch]]
kernel = "tile_sums"
grid = ["rows * ceil_div(cols, 1024)"]
block = [256]
args = ["x", "tile_sum", "cols", "ceil_div(cols, 1024)"]

[[launch]]
kernel = "scan_tile_sums"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["tile_sum", "rows", "ceil_div(cols, 1024)"]

[[launch]]
kernel = "scan_tiles"
grid = ["rows * ceil_div(cols, 1024)"]
block = [256]
args = ["x", "tile_sum", "out", "cols", "ceil_div(cols, 1024)"]

[[scratch]]
name = "tile_sum"
dtype = "float32"
size = "rows * ceil_div(cols, 1024)"
*/
// Reduce-then-scan over three launches (every 1024-column tile of every row is one block, so the
// tiles of a long row are scanned in parallel). 1: each tile's sum by a shared-memory tree. 2: one
// thread per row turns its tile sums into exclusive prefix sums, in double, in place. 3: each
// tile is scanned again, each of 256 threads owning 4 consecutive elements: a sequential scan of
// its 4, an inclusive Hillis-Steele scan of the 256 thread totals in shared memory (two buffers),
// then its elements get the tile's offset + the totals before it.
#define TILE 1024
#define BLOCK 256
#define PER (TILE / BLOCK)

extern "C" __global__ void tile_sums(const float* __restrict__ x, float* __restrict__ tile_sum, int cols,
                                     int tiles) {
    __shared__ float sh[BLOCK];
    const int row = blockIdx.x / tiles;
    const int begin = (blockIdx.x % tiles) * TILE, end = min(cols, begin + TILE);
    const float* xr = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += BLOCK) s += xr[c];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) tile_sum[blockIdx.x] = sh[0];
}

extern "C" __global__ void scan_tile_sums(float* tile_sum, int rows, int tiles) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float* t = tile_sum + (size_t)row * tiles;
    double run = 0.0;
    for (int k = 0; k < tiles; ++k) {
        const double v = t[k];
        t[k] = (float)run;
        run += v;
    }
}

extern "C" __global__ void scan_tiles(const float* __restrict__ x, const float* __restrict__ tile_sum,
                                      float* __restrict__ out, int cols, int tiles) {
    __shared__ float buf[2][BLOCK];
    const int row = blockIdx.x / tiles;
    const int begin = (blockIdx.x % tiles) * TILE;
    const size_t base = (size_t)row * cols;
    const int tid = threadIdx.x;
    const int first = begin + tid * PER;
    float v[PER];
    float run = 0.0f;
    for (int j = 0; j < PER; ++j) {
        const int c = first + j;
        run += (c < cols) ? x[base + c] : 0.0f;
        v[j] = run;
    }
    int src = 0;
    buf[src][tid] = run;
    __syncthreads();
    for (int step = 1; step < BLOCK; step <<= 1) {
        const float add = tid >= step ? buf[src][tid - step] : 0.0f;
        buf[1 - src][tid] = buf[src][tid] + add;
        src = 1 - src;
        __syncthreads();
    }
    const float offset = tile_sum[blockIdx.x] + (tid > 0 ? buf[src][tid - 1] : 0.0f);
    for (int j = 0; j < PER; ++j) {
        const int c = first + j;
        if (c < cols) out[base + c] = offset + v[j];
    }
}
