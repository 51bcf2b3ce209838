/* mutagym
[[launch]]
kernel = "cumsum_rows_shfl"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "out", "rows", "cols"]
*/
// One block per row, tiles of 256. Inside a tile every warp scans its 32 values with
// __shfl_up_sync, lane 31 publishes the warp total, warp 0 scans the eight totals the same way, and
// each thread adds the totals of the warps before it plus the carry from earlier tiles.
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_inclusive_scan(float v, int lane) {
    for (int offset = 1; offset < 32; offset <<= 1) {
        const float up = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset) {
            v += up;
        }
    }
    return v;
}

extern "C" __global__ void cumsum_rows_shfl(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    __shared__ float warp_totals[WARPS];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const float* xr = x + (size_t)row * cols;
    float* outr = out + (size_t)row * cols;

    float carry = 0.0f;
    for (int base = 0; base < cols; base += BLOCK) {
        const int c = base + tid;
        float v = c < cols ? xr[c] : 0.0f;
        v = warp_inclusive_scan(v, lane);
        if (lane == 31) {
            warp_totals[warp] = v;
        }
        __syncthreads();
        if (warp == 0) {
            float t = lane < WARPS ? warp_totals[lane] : 0.0f;
            t = warp_inclusive_scan(t, lane);
            if (lane < WARPS) {
                warp_totals[lane] = t;  // now inclusive prefix over warps
            }
        }
        __syncthreads();
        const float before = warp > 0 ? warp_totals[warp - 1] : 0.0f;
        if (c < cols) {
            outr[c] = carry + (before + v);
        }
        carry += warp_totals[WARPS - 1];
        __syncthreads();  // warp_totals is rewritten by the next tile
    }
}
