/* mutagym
# Variant: no shared memory; a grid-stride loop gives each thread whole outputs, read straight
# from global memory, accumulated in double with the tap loop outside the channel loop.
[[launch]]
kernel = "conv1d_direct_f64"
grid = ["min(ceil_div(batch * out_ch * out_len, 256), 1024)"]
block = [256]
args = ["x", "weight", "bias", "out", "batch", "in_ch", "out_ch", "out_len", "ksize"]
*/
extern "C" __global__ void conv1d_direct_f64(const float* __restrict__ x, const float* __restrict__ weight,
                                             const float* __restrict__ bias, float* __restrict__ out,
                                             int batch, int in_ch, int out_ch, int out_len, int ksize) {
    const int in_len = out_len + ksize - 1;
    const int total = batch * out_ch * out_len;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
        const int l = idx % out_len;
        const int oc = (idx / out_len) % out_ch;
        const int b = idx / (out_len * out_ch);
        const float* xb = x + (size_t)b * in_ch * in_len + l;
        const float* wo = weight + (size_t)oc * in_ch * ksize;
        double acc = (double)bias[oc];
        for (int k = 0; k < ksize; ++k) {
            for (int c = 0; c < in_ch; ++c) {
                acc += (double)wo[c * ksize + k] * (double)xb[(size_t)c * in_len + k];
            }
        }
        out[idx] = (float)acc;
    }
}
