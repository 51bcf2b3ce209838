/* mutagym
inout = ["x"]

[[launch]]
kernel = "frobenius_inplace"
grid = [1]
block = [256]
args = ["x", "rows * cols"]
*/
// In place, one launch, one 256-thread block for the whole tensor (a whole-tensor reduction needs
// no second launch when a single block does it). Each thread keeps a Kahan-compensated float32 sum
// of squares over its strided slice; the 256 (sum - compensation) values are added in double by
// a shared-memory tree, and after the barrier every thread scales its slice by 1 / sqrt(total).
#define BLOCK 256

extern "C" __global__ void frobenius_inplace(float* x, long long n) {
    __shared__ double sh[BLOCK];
    const int tid = threadIdx.x;
    float s = 0.0f, comp = 0.0f;
    for (long long i = tid; i < n; i += BLOCK) {
        const float y = x[i] * x[i] - comp;
        const float t = s + y;
        comp = (t - s) - y;
        s = t;
    }
    sh[tid] = (double)s - (double)comp;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) sh[tid] += sh[tid + half];
        __syncthreads();
    }
    const float inv = (float)(1.0 / sqrt(sh[0]));
    for (long long i = tid; i < n; i += BLOCK) x[i] *= inv;
}
