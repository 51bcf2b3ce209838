/* mutagym
[[launch]]
kernel = "sum_slices_f64"
grid = ["rows * ceil_div(cols, 8192)"]
block = [256]
args = ["x", "partial", "rows", "cols", "ceil_div(cols, 8192)"]

[[launch]]
kernel = "sum_partials_f64"
grid = ["ceil_div(rows, 128)"]
block = [128]
args = ["partial", "out", "rows", "ceil_div(cols, 8192)"]

[[scratch]]
name = "partial"
dtype = "float64"
size = "rows * ceil_div(cols, 8192)"
*/
// Two-level reduction over two launches, in double: launch 1 gives every 8192-column slice of
// every row its own block (grid = rows * slices, flattened so that 65,536 rows fit in gridDim.x),
// which sums the slice in double and reduces the 256 partial sums with a shared-memory tree into
// partial[row * slices + slice]; launch 2 adds each row's slices, one thread per row, and rounds
// to float once.
#define SLICE 8192
#define BLOCK 256

extern "C" __global__ void sum_slices_f64(const float* __restrict__ x, double* __restrict__ partial,
                                          int rows, int cols, int slices) {
    __shared__ double sh[BLOCK];
    const int row = blockIdx.x / slices;
    const int slice = blockIdx.x % slices;
    const int begin = slice * SLICE;
    const int end = min(cols, begin + SLICE);
    const float* xr = x + (size_t)row * cols;
    double s = 0.0;
    for (int c = begin + threadIdx.x; c < end; c += BLOCK) s += (double)xr[c];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0 && row < rows) partial[blockIdx.x] = sh[0];
}

extern "C" __global__ void sum_partials_f64(const double* __restrict__ partial, float* __restrict__ out,
                                            int rows, int slices) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    double s = 0.0;
    for (int k = 0; k < slices; ++k) s += partial[(size_t)row * slices + k];
    out[row] = (float)s;
}
