/* mutagym
[[launch]]
kernel = "mse_partial"
grid = [256]
block = [256]
args = ["predictions", "targets", "partial", "n"]

[[launch]]
kernel = "mse_final"
grid = [1]
block = [256]
args = ["partial", "out", "n"]

[[scratch]]
name = "partial"
dtype = "float64"
size = "256"
*/
// A fixed grid of 256 blocks with a grid-stride loop writes 256 partials (double); one block
// adds them and divides.
extern "C" __global__ void mse_partial(const float* predictions, const float* targets, double* partial, int n) {
    __shared__ double red[256];
    double s = 0.0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * 256) {
        double d = (double)predictions[i] - (double)targets[i];
        s += d * d;
    }
    red[threadIdx.x] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}

extern "C" __global__ void mse_final(const double* partial, float* out, int n) {
    __shared__ double red[256];
    red[threadIdx.x] = partial[threadIdx.x];
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)(red[0] / n);
}
