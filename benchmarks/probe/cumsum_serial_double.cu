/* mutagym
[[launch]]
kernel = "scan_serial"
grid = ["ceil_div(rows, 32)"]
block = [32]
args = ["x", "out", "rows", "cols"]
*/
// One thread per row, a running total in double: no tiles, no carries to get wrong.
extern "C" __global__ void scan_serial(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    double run = 0.0;
    for (int c = 0; c < cols; ++c) {
        run += x[(size_t)r * cols + c];
        out[(size_t)r * cols + c] = (float)run;
    }
}
