/* mutagym
[[launch]]
kernel = "ce_plain_lse"
grid = ["batch"]
block = [256]
args = ["logits", "labels", "out", "batch", "classes"]
fill = {out = 0}
*/
// Block per sample: loss = log(sum exp(z)) - z[label], averaged over the batch with atomicAdd.
extern "C" __global__ void ce_plain_lse(const float* logits, const int64_t* labels, float* out, int batch, int classes) {
    __shared__ float red[256];
    const float* z = logits + (size_t)blockIdx.x * classes;
    float s = 0.0f;
    for (int c = threadIdx.x; c < classes; c += 256) s += expf(z[c]);
    red[threadIdx.x] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, (logf(red[0]) - z[labels[blockIdx.x]]) / batch);
}
