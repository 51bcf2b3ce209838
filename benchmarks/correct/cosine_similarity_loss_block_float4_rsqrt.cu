/* mutagym
[[launch]]
kernel = "cosine_rows_vec4"
grid = ["batch"]
block = [256]
args = ["a", "b", "row_term", "dim", "eps"]

[[launch]]
kernel = "cosine_mean"
grid = [1]
block = [128]
args = ["row_term", "out", "batch"]

[[scratch]]
name = "row_term"
dtype = "float32"
size = "batch"
*/
// Launch 1: one 256-thread block per row, float4 loads of a and b when dim % 4 == 0 (rows
// 16-byte aligned), else scalar; three float32 sums per thread, each finished by an xor-shuffle
// butterfly per warp and a fold of the eight warp values by thread 0, which writes
// 1 - ab * rsqrtf(max(aa, eps^2)) * rsqrtf(max(bb, eps^2)) (max(sqrt(s), eps) = sqrt(max(s,
// eps^2)); eps^2 = 1e-16 is a normal float). Launch 2: one block averages the row terms in double.
#define BLOCK 256
#define WARPS (BLOCK / 32)

extern "C" __global__ void cosine_rows_vec4(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ row_term, int dim, float eps) {
    __shared__ float sh[3][WARPS];
    const size_t base = (size_t)blockIdx.x * dim;
    const float* ar = a + base;
    const float* br = b + base;
    float ab = 0.0f, aa = 0.0f, bb = 0.0f;
    if ((dim & 3) == 0) {
        const float4* a4 = reinterpret_cast<const float4*>(ar);
        const float4* b4 = reinterpret_cast<const float4*>(br);
        for (int i = threadIdx.x; i < (dim >> 2); i += BLOCK) {
            const float4 x = a4[i], y = b4[i];
            ab += (x.x * y.x + x.y * y.y) + (x.z * y.z + x.w * y.w);
            aa += (x.x * x.x + x.y * x.y) + (x.z * x.z + x.w * x.w);
            bb += (y.x * y.x + y.y * y.y) + (y.z * y.z + y.w * y.w);
        }
    } else {
        for (int j = threadIdx.x; j < dim; j += BLOCK) {
            const float x = ar[j], y = br[j];
            ab += x * y;
            aa += x * x;
            bb += y * y;
        }
    }
    for (int mask = 16; mask > 0; mask >>= 1) {
        ab += __shfl_xor_sync(0xffffffffu, ab, mask);
        aa += __shfl_xor_sync(0xffffffffu, aa, mask);
        bb += __shfl_xor_sync(0xffffffffu, bb, mask);
    }
    if ((threadIdx.x & 31) == 0) {
        sh[0][threadIdx.x >> 5] = ab;
        sh[1][threadIdx.x >> 5] = aa;
        sh[2][threadIdx.x >> 5] = bb;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float sab = 0.0f, saa = 0.0f, sbb = 0.0f;
        for (int w = 0; w < WARPS; ++w) {
            sab += sh[0][w];
            saa += sh[1][w];
            sbb += sh[2][w];
        }
        const float e2 = eps * eps;
        row_term[blockIdx.x] = 1.0f - sab * rsqrtf(fmaxf(saa, e2)) * rsqrtf(fmaxf(sbb, e2));
    }
}

extern "C" __global__ void cosine_mean(const float* __restrict__ row_term, float* __restrict__ out, int batch) {
    __shared__ double sh[128];
    double s = 0.0;
    for (int i = threadIdx.x; i < batch; i += 128) s += row_term[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = 64; half > 0; half >>= 1) {
        if (threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)(sh[0] / (double)batch);
}
