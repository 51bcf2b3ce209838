/* mutagym
[[launch]]
kernel = "ce_rows"
grid = ["batch"]
block = [256]
args = ["logits", "labels", "loss", "batch", "classes"]

[[launch]]
kernel = "ce_mean"
grid = [1]
block = [1024]
args = ["loss", "out", "batch"]

[[scratch]]
name = "loss"
dtype = "float32"
size = "batch"
*/
// Per-sample losses (max, then sum of exp) into scratch; a single block averages them in double.
extern "C" __global__ void ce_rows(const float* logits, const int64_t* labels, float* loss, int batch, int classes) {
    __shared__ float red[256];
    const int t = threadIdx.x;
    const float* z = logits + (size_t)blockIdx.x * classes;
    float m = -INFINITY;
    for (int c = t; c < classes; c += 256) m = fmaxf(m, z[c]);
    red[t] = m;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) { if (t < h) red[t] = fmaxf(red[t], red[t + h]); __syncthreads(); }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (int c = t; c < classes; c += 256) s += expf(z[c] - m);
    red[t] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) { if (t < h) red[t] += red[t + h]; __syncthreads(); }
    if (t == 0) loss[blockIdx.x] = m + logf(red[0]) - z[labels[blockIdx.x]];
}

extern "C" __global__ void ce_mean(const float* loss, float* out, int batch) {
    __shared__ double red[1024];
    double s = 0.0;
    for (int i = threadIdx.x; i < batch; i += 1024) s += loss[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int h = 512; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)(red[0] / batch);
}
