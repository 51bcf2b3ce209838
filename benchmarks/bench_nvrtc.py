"""How long NVRTC takes to compile a submission (the compile gate), per kernel and architecture.

Recorded results: benchmarks/README.md ("NVRTC compile"). Run:

    python benchmarks/bench_nvrtc.py --runs 10

Each timing is a cold compile through `mutagym.runtime.nvrtc.nvrtc_compile`: every run appends a
unique comment to the text, so the in-process cache misses and NVRTC builds a fresh program
(source preparation included). The table gives the median and the minimum over the runs, and the
time of a cache hit on the same text for comparison. No GPU is needed.

`nvrtc_compile` runs NVRTC in a forked, rlimited child of a helper process; the "in-process"
column times the same NVRTC calls made directly in this process (what `nvrtc_compile` did before
it was bounded), interleaved run by run with the bounded ones, and "ratio" is bounded / in-process.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field

from mutagym.runtime import nvrtc_child
from mutagym.runtime.nvrtc import compile_options, nvrtc_compile, nvrtc_version
from mutagym.runtime.source_prep import prepare_for_nvrtc


# --------------------------------------------------------------------------------------------
# Settings


@dataclass
class Settings:
    runs: int = 10
    """Cold compiles per kernel and architecture; the table reports their median."""
    archs: list[str] = field(default_factory=lambda: ["compute_80", "sm_90"])
    """Architectures: `compute_XX` yields PTX only, `sm_XX` PTX and a cubin (what a GPU runs)."""


def parse_settings() -> Settings:
    defaults = Settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=defaults.runs, help=Settings.runs.__doc__)
    parser.add_argument("--arch", dest="archs", action="append",
                        help="architecture to compile for (repeat for several; default: "
                             f"{' '.join(defaults.archs)})")
    args = parser.parse_args()
    return Settings(runs=args.runs, archs=args.archs or defaults.archs)


# --------------------------------------------------------------------------------------------
# Kernels: a spread of what submissions look like


def submission(kernel: str, args: str, code: str) -> str:
    return (f'/* mutagym\n[[launch]]\nkernel = "{kernel}"\ngrid = ["rows"]\nblock = [256]\n'
            f"args = {args}\n*/\n{code}")


KERNELS = {
    "elementwise (relu)": submission("relu", '["x", "out", "n"]', """
extern "C" __global__ void relu(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], 0.0f);
}
"""),
    "reduction (layernorm)": submission("layernorm", '["x", "w", "b", "out", "rows", "cols", "eps"]', """
#include <math.h>
extern "C" __global__ void layernorm(const float* x, const float* w, const float* b, float* out,
                                     int rows, int cols, float eps) {
    __shared__ float s_sum[256], s_sq[256];
    const float* row = x + (long)blockIdx.x * cols;
    float sum = 0.f, sq = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) { sum += row[c]; sq += row[c] * row[c]; }
    s_sum[threadIdx.x] = sum; s_sq[threadIdx.x] = sq;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) { s_sum[threadIdx.x] += s_sum[threadIdx.x + k];
                               s_sq[threadIdx.x] += s_sq[threadIdx.x + k]; }
        __syncthreads();
    }
    float mean = s_sum[0] / cols, rstd = rsqrtf(s_sq[0] / cols - mean * mean + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[(long)blockIdx.x * cols + c] = (row[c] - mean) * rstd * w[c] + b[c];
}
"""),
    "warp shuffle (softmax)": submission("softmax", '["x", "out", "rows", "cols"]', """
#include <stdint.h>
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
extern "C" __global__ void softmax(const float* x, float* out, int32_t rows, int32_t cols) {
    int32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* in = x + (int64_t)row * cols;
    float m = -INFINITY;
    for (int32_t c = lane; c < cols; c += 32) m = fmaxf(m, in[c]);
    m = warp_max(m);
    float s = 0.f;
    for (int32_t c = lane; c < cols; c += 32) s += expf(in[c] - m);
    s = warp_sum(s);
    for (int32_t c = lane; c < cols; c += 32) out[(int64_t)row * cols + c] = expf(in[c] - m) / s;
}
""".replace("#include <stdint.h>", "#include <stdint.h>\n#include <math.h>")),
    "fp16 header (cuda_fp16.h)": submission("relu_h", '["x", "out", "n"]', """
#include <cuda_fp16.h>
extern "C" __global__ void relu_h(const __half* x, __half* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmax(x[i], __float2half(0.0f));
}
"""),
    "bf16 header (cuda_bf16.h)": submission("gelu_bf", '["x", "out", "n"]', """
#include <cuda_bf16.h>
extern "C" __global__ void gelu_bf(const __nv_bfloat16* x, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = __bfloat162float(x[i]);
                 out[i] = __float2bfloat16(0.5f * v * (1.0f + erff(v * 0.70710678f))); }
}
"""),
    "tiled matmul": submission("matmul", '["a", "b", "c", "m", "n", "k"]', """
#define TILE 16
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float ta[TILE][TILE], tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < (k + TILE - 1) / TILE; ++t) {
        ta[threadIdx.y][threadIdx.x] = row < m && t * TILE + threadIdx.x < k ? a[row * k + t * TILE + threadIdx.x] : 0.f;
        tb[threadIdx.y][threadIdx.x] = col < n && t * TILE + threadIdx.y < k ? b[(t * TILE + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        #pragma unroll
        for (int i = 0; i < TILE; ++i) acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
"""),
}


# --------------------------------------------------------------------------------------------
# Measure


def cold_ms(source: str, arch: str, runs: int, tag: str) -> tuple[list[float], list[float]]:
    """Cold compiles, bounded (`nvrtc_compile`) and in process, one of each per run."""
    from cuda.bindings import nvrtc

    bounded, in_process = [], []
    for run in range(runs):
        start = time.perf_counter()
        nvrtc_compile(f"{source}\n// bench {tag} {arch} {run} {time.time_ns()}\n", arch=arch)
        bounded.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        text = prepare_for_nvrtc(f"{source}\n// bench in-process {tag} {arch} {run} {time.time_ns()}\n")
        nvrtc_child._compile(nvrtc, text.encode(), b"submission.cu", compile_options(arch),
                             arch.startswith("sm_"))
        in_process.append((time.perf_counter() - start) * 1e3)
    return bounded, in_process


def cache_hit_us(source: str, arch: str) -> float:
    nvrtc_compile(source, arch=arch)
    start = time.perf_counter()
    for _ in range(100):
        nvrtc_compile(source, arch=arch)
    return (time.perf_counter() - start) / 100 * 1e6


def main() -> None:
    settings = parse_settings()
    major, minor = nvrtc_version()
    settings_rows = [("NVRTC", f"{major}.{minor}"), ("runs", str(settings.runs)),
                     ("archs", ", ".join(settings.archs))]
    rows = []
    for name, source in KERNELS.items():
        for arch in settings.archs:
            nvrtc_compile(f"{source}\n// warm-up {arch}\n", arch=arch)  # load libnvrtc first
            times, in_process = cold_ms(source, arch, settings.runs, name)
            median, base = statistics.median(times), statistics.median(in_process)
            rows.append((name, arch, f"{median:.1f}", f"{min(times):.1f}", f"{base:.1f}",
                         f"{median / base:.2f}", f"{cache_hit_us(source, arch):.1f}"))
    header = ("kernel", "arch", "median ms", "min ms", "in-process ms", "ratio", "cache hit µs")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for key, value in settings_rows:
            print(f"{key}: {value}")
        print()
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))
        return
    console = Console()
    table = Table(title="settings")
    table.add_column("setting")
    table.add_column("value")
    for row in settings_rows:
        table.add_row(*row)
    console.print(table)
    table = Table(title="NVRTC cold compile, per kernel")
    for column in header:
        table.add_column(column, justify="left" if column in ("kernel", "arch") else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)


if __name__ == "__main__":
    main()
