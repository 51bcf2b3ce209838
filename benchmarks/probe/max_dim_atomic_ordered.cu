/* mutagym
[[launch]]
kernel = "max_split_ordered"
grid = ["rows", "ceil_div(cols, 2048)"]
block = [128]
args = ["x", "out", "rows", "cols"]
fill = {out = -inf}
*/
// Split rows into 2048-column chunks; a chunk's max is merged with integer atomics that order
// floats correctly: signed max for non-negative values, unsigned min for negative ones. The sign
// is the sign bit, not `v >= 0.0f`: -0.0 compares equal to 0 but is INT_MIN as an int, so a row of
// -0.0 would keep the -inf it starts from.
__device__ void atomic_fmax(float* addr, float v) {
    if (__float_as_int(v) >= 0) atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
    else atomicMin(reinterpret_cast<unsigned int*>(addr), __float_as_uint(v));
}

extern "C" __global__ void max_split_ordered(const float* x, float* out, int rows, int cols) {
    __shared__ float lanes[128];
    const float* row = x + (size_t)blockIdx.x * cols;
    int c0 = blockIdx.y * 2048, c1 = min(cols, c0 + 2048);
    float m = -INFINITY;
    for (int c = c0 + threadIdx.x; c < c1; c += 128) m = fmaxf(m, row[c]);
    lanes[threadIdx.x] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = fmaxf(fmaxf(lanes[threadIdx.x], lanes[threadIdx.x + 32]),
                        fmaxf(lanes[threadIdx.x + 64], lanes[threadIdx.x + 96]));
        for (int o = 16; o > 0; o /= 2) w = fmaxf(w, __shfl_down_sync(0xffffffffu, w, o));
        if (threadIdx.x == 0) atomic_fmax(out + blockIdx.x, w);
    }
}
