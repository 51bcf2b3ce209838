/* mutagym
[[launch]]
kernel = "mse_moments"
grid = ["min(ceil_div(n, 1024), 120)"]
block = [256]
args = ["predictions", "targets", "moments", "n"]
fill = {moments = 0}

[[launch]]
kernel = "mse_combine"
grid = [1]
block = [1]
args = ["moments", "out", "n"]

[[scratch]]
name = "moments"
dtype = "float32"
size = "3"
*/
// sum (p - t)^2 = sum p^2 - 2 sum p t + sum t^2: three running sums in one pass over the inputs
// (grid-stride), reduced per warp and added with atomics, combined at the end.
extern "C" __global__ void mse_moments(const float* __restrict__ p, const float* __restrict__ t,
                                       float* __restrict__ moments, int n) {
    float pp = 0.f, pt = 0.f, tt = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float a = p[i], b = t[i];
        pp = fmaf(a, a, pp);
        pt = fmaf(a, b, pt);
        tt = fmaf(b, b, tt);
    }
    for (int off = 16; off > 0; off >>= 1) {
        pp += __shfl_down_sync(0xffffffffu, pp, off);
        pt += __shfl_down_sync(0xffffffffu, pt, off);
        tt += __shfl_down_sync(0xffffffffu, tt, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&moments[0], pp);
        atomicAdd(&moments[1], pt);
        atomicAdd(&moments[2], tt);
    }
}

extern "C" __global__ void mse_combine(const float* __restrict__ moments, float* __restrict__ out, int n) {
    out[0] = (moments[0] - 2.0f * moments[1] + moments[2]) / (float)n;
}
