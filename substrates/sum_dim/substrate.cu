/* mutagym
[[launch]]
kernel = "sum_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row. Each thread accumulates a strided slice of the row (float4 loads when the
// row is 16-byte aligned, i.e. cols % 4 == 0), then a shared-memory tree halves the partial sums.
#define BLOCK 256

extern "C" __global__ void sum_rows(const float* __restrict__ x, float* __restrict__ out, int rows,
                                    int cols) {
    __shared__ float partial[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * cols;

    float acc = 0.0f;
    if ((cols & 3) == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const int n4 = cols >> 2;
        for (int i = tid; i < n4; i += BLOCK) {
            float4 v = x4[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int i = tid; i < cols; i += BLOCK) {
            acc += xr[i];
        }
    }
    partial[tid] = acc;
    __syncthreads();

    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            partial[tid] += partial[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0 && row < rows) {
        out[row] = partial[0];
    }
}
