/* mutagym
[[launch]]
kernel = "rms_vec_guarded"
grid = ["rows"]
block = [128]
args = ["x", "weight", "out", "rows", "cols", "eps"]
*/
// float4 only when every row starts 16-byte aligned (cols % 4 == 0); otherwise scalar accesses.
__device__ float sum128(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    return red[0];
}

extern "C" __global__ void rms_vec_guarded(const float* x, const float* weight, float* out, int rows, int cols, float eps) {
    __shared__ float red[128];
    const float* in = x + (size_t)blockIdx.x * cols;
    float* o = out + (size_t)blockIdx.x * cols;
    const bool vec = (cols & 3) == 0;
    float ss = 0.0f;
    if (vec) {
        for (int q = threadIdx.x; q < cols / 4; q += 128) {
            float4 v = reinterpret_cast<const float4*>(in)[q];
            ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += 128) ss += in[c] * in[c];
    }
    const float scale = rsqrtf(sum128(ss, red) / cols + eps);
    if (vec) {
        for (int q = threadIdx.x; q < cols / 4; q += 128) {
            float4 v = reinterpret_cast<const float4*>(in)[q];
            float4 w = reinterpret_cast<const float4*>(weight)[q];
            reinterpret_cast<float4*>(o)[q] = make_float4(v.x * scale * w.x, v.y * scale * w.y,
                                                          v.z * scale * w.z, v.w * scale * w.w);
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += 128) o[c] = in[c] * scale * weight[c];
    }
}
