/* mutagym
[[launch]]
kernel = "frob_partial_sums"
grid = ["min(ceil_div(rows * cols, 4096), 64)"]
block = [256]
shared_bytes = 0
args = ["x", "partial", "rows", "cols"]

[[launch]]
kernel = "frob_total"
grid = [1]
block = [256]
shared_bytes = 0
args = ["partial", "norm", "rows", "cols"]

[[launch]]
kernel = "frob_scale"
grid = ["min(ceil_div(rows * cols, 1024), 1024)"]
block = [256]
shared_bytes = 0
args = ["x", "norm", "out", "rows", "cols"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "64"

[[scratch]]
name = "norm"
dtype = "float32"
size = "1"
*/
// Three launches over the flat tensor of n = rows * cols elements:
//   1. every block sums x^2 over a grid-stride slice (float4 loads, then the n % 4 tail) and a
//      shared-memory tree writes its partial sum to partial[blockIdx.x];
//   2. one block adds the partials (as many as launch 1 had blocks) and stores sqrt(total);
//   3. a grid-stride pass writes out = x / norm (float4 again, then the tail).
#include <math.h>
#define BLOCK 256
#define MAX_PARTS 64
#define ELEMS_PER_PART 4096

// Tree-sum in shared memory; the total is valid in thread 0 only.
__device__ float block_sum(float v, float* buf) {
    const int tid = threadIdx.x;
    buf[tid] = v;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            buf[tid] += buf[tid + stride];
        }
        __syncthreads();
    }
    return buf[0];
}

extern "C" __global__ void frob_partial_sums(const float* __restrict__ x,
                                             float* __restrict__ partial, int rows, int cols) {
    __shared__ float buf[BLOCK];
    const size_t n = (size_t)rows * cols;
    const size_t n4 = n / 4;
    const size_t gid = (size_t)blockIdx.x * BLOCK + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * BLOCK;
    const float4* x4 = reinterpret_cast<const float4*>(x);

    float acc = 0.0f;
    for (size_t i = gid; i < n4; i += stride) {
        const float4 v = x4[i];
        acc += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    if (gid < n - n4 * 4) {  // the last n % 4 elements
        const float v = x[n4 * 4 + gid];
        acc += v * v;
    }
    const float total = block_sum(acc, buf);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = total;
    }
}

extern "C" __global__ void frob_total(const float* __restrict__ partial, float* __restrict__ norm,
                                      int rows, int cols) {
    __shared__ float buf[BLOCK];
    const size_t n = (size_t)rows * cols;
    const size_t blocks_needed = (n + ELEMS_PER_PART - 1) / ELEMS_PER_PART;  // launch 1's grid
    const int parts = blocks_needed < MAX_PARTS ? (int)blocks_needed : MAX_PARTS;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < parts; i += BLOCK) {
        acc += partial[i];
    }
    const float total = block_sum(acc, buf);
    if (threadIdx.x == 0) {
        norm[0] = sqrtf(total);
    }
}

extern "C" __global__ void frob_scale(const float* __restrict__ x, const float* __restrict__ norm,
                                      float* __restrict__ out, int rows, int cols) {
    const size_t n = (size_t)rows * cols;
    const size_t n4 = n / 4;
    const size_t gid = (size_t)blockIdx.x * BLOCK + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * BLOCK;
    const float nrm = norm[0];
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (size_t i = gid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x /= nrm;
        v.y /= nrm;
        v.z /= nrm;
        v.w /= nrm;
        o4[i] = v;
    }
    if (gid < n - n4 * 4) {
        out[n4 * 4 + gid] = x[n4 * 4 + gid] / nrm;
    }
}
