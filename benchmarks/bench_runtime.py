"""Benchmark the CPU emulator: compile times, elementwise throughput, barrier crossings, and numba.

Recorded results live in benchmarks/README.md, with the command that produced them:

    python benchmarks/bench_runtime.py            # about a minute on 2 cores

What is measured, top to bottom (all in one process, one run, so the ratios are comparable):

1. Compile time, from a fresh `MUTAGYM_CACHE` (a temporary folder): the sandboxed runner build and
   the precompiled emulation header (PCH) build, each once; then the median cold compile of
   `Settings.distinct_kernels` reduction kernels made distinct by a constant (each is a real g++
   build that uses the PCH); then the median cache hit (`compile` of a text already built).
2. Elementwise throughput: a grid-stride ReLU over `Settings.relu_elements` floats. One run
   includes the child process start and the buffer set-up; the marginal cost of a case is the
   difference between a batch of `Settings.batch_cases` cases and a batch of one, divided by
   the extra cases. Elements per second are reported both ways, and once more for the kernel's
   compute alone: the marginal cost minus that of a kernel touching one element of the same
   buffers (which is what filling, poisoning and reading back 2 x 16 MB costs).
3. Barrier crossings per second: a 256-thread shared-memory tree reduction (9 `__syncthreads`
   per thread) over `Settings.reduction_blocks` blocks; crossings = threads x barriers. Same
   marginal-cost method.
4. The same two kernels in numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`, which must be set
   before numba is imported, so they run in a subprocess) on smaller sizes; the table reports the
   emulator's speed-up per element and per barrier crossing.

Targets (the emulator's design targets): median compile <= 0.2 s with the
PCH, cache hit <= 10 ms, >= 2 million barrier crossings per second per core, >= 1000x numba's
simulator.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------- settings


@dataclass
class Settings:
    distinct_kernels: int = 10
    """Cold compiles to take the median of; each kernel differs from the others by one constant."""
    cache_hits: int = 20
    """Compiles of an already built text to take the median of."""
    relu_elements: int = 4 * 1024 * 1024
    """Floats per ReLU case (4M)."""
    reduction_blocks: int = 256
    """Blocks of 256 threads in the tree-reduction case."""
    batch_cases: int = 5
    """Cases in the batch that measures the marginal per-case cost."""
    repeats: int = 3
    """Timed repetitions of every run measurement; the best is kept."""
    numba_relu_elements: int = 4096
    """Floats for the ReLU in numba's simulator (it runs a Python thread per CUDA thread)."""
    numba_reduction_blocks: int = 4
    """Blocks of 256 threads for the reduction in numba's simulator."""
    cache_root: str = field(default="", metadata={"derived": True})
    """Derived: the fresh MUTAGYM_CACHE folder this run builds into (a temporary folder)."""


def parse_settings() -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Settings):
        if not f.metadata.get("derived"):
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    return Settings(**vars(parser.parse_args()))


settings = parse_settings()
settings.cache_root = tempfile.mkdtemp(prefix="mutagym-bench-cache-")
atexit.register(shutil.rmtree, settings.cache_root, ignore_errors=True)
os.environ["MUTAGYM_CACHE"] = settings.cache_root      # before mutagym touches its cache

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from mutagym.runtime import RunCase, compile  # noqa: E402
from mutagym.runtime import toolchain  # noqa: E402

console = Console(width=max(Console().width, 110))
settings_table = Table(title="bench_runtime settings")
settings_table.add_column("setting")
settings_table.add_column("value", justify="right")
for f in dataclasses.fields(Settings):
    label = f"{f.name} (derived)" if f.metadata.get("derived") else f.name
    settings_table.add_row(label, str(getattr(settings, f.name)))
settings_table.add_row("cpu cores", str(os.cpu_count()))
console.print(settings_table)

# ---------------------------------------------------------------------------- kernels

REDUCTION = """\
/* mutagym
[[launch]]
kernel = "block_sum"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]
*/
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] * SCALE : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""
BARRIERS_PER_THREAD = 9   # one after the load, eight in the loop

RELU = """\
/* mutagym
[[launch]]
kernel = "relu"
grid = [1024]
block = [256]
args = ["x", "out", "n"]
*/
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""


EMPTY = """\
/* mutagym
[[launch]]
kernel = "touch"
grid = [1]
block = [1]
args = ["x", "out", "n"]
*/
extern "C" __global__ void touch(const float* x, float* out, int n) { out[0] = x[0] + n; }
"""


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# ---------------------------------------------------------------------------- 1. compile times

with console.status("building the runner and the precompiled header in a fresh cache"):
    runner_s = timed(toolchain.runner_path)
    pch_s = timed(toolchain.header_path)
    first_kernel_s = timed(lambda: compile(REDUCTION.replace("SCALE", "1.0f"), backend="cpu"))

cold = []
with console.status(f"compiling {settings.distinct_kernels} distinct kernels"):
    for k in range(settings.distinct_kernels):
        source = REDUCTION.replace("SCALE", f"{k + 2}.0f")
        cold.append(timed(lambda: compile(source, backend="cpu")))
hot_source = REDUCTION.replace("SCALE", "1.0f")
hits = [timed(lambda: compile(hot_source, backend="cpu")) for _ in range(settings.cache_hits)]
cold_median, hit_median = statistics.median(cold), statistics.median(hits)

# ---------------------------------------------------------------------------- 2./3. run throughput


def marginal(kernel, case: RunCase, expected=None) -> tuple[float, float]:
    """(seconds for one case in its own batch, marginal seconds per extra case in a batch)."""
    one, many = [], []
    for _ in range(settings.repeats):
        t0 = time.perf_counter()
        results = kernel.run_batch([case], timeout_s=120)
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        results += kernel.run_batch([case] * settings.batch_cases, timeout_s=120)
        many.append(time.perf_counter() - t0)
        for r in results:
            assert r.ok, r.message
            if expected is not None:
                np.testing.assert_allclose(r.outputs["out"], expected, rtol=1e-5)
    return min(one), (min(many) - min(one)) / (settings.batch_cases - 1)


rng = np.random.default_rng(0)
with console.status(f"ReLU over {settings.relu_elements:,} floats"):
    n = settings.relu_elements
    x = rng.standard_normal(n).astype(np.float32)
    relu_case = RunCase({"x": x}, {"out": ((n,), "float32")}, {"n": n})
    relu_one, relu_each = marginal(compile(RELU, backend="cpu"), relu_case, np.maximum(x, 0))
    # The same buffers with a kernel that touches one element: buffer set-up, copies and the child.
    empty_one, empty_each = marginal(compile(EMPTY, backend="cpu"), relu_case)

with console.status(f"tree reduction over {settings.reduction_blocks} blocks of 256 threads"):
    n = settings.reduction_blocks * 256
    x = rng.integers(-4, 5, n).astype(np.float32)
    red_kernel = compile(hot_source, backend="cpu")
    red_one, red_each = marginal(red_kernel, RunCase({"x": x}, {"out": ((settings.reduction_blocks,), "float32")},
                                                     {"n": n}), x.reshape(-1, 256).sum(1))
crossings = settings.reduction_blocks * 256 * BARRIERS_PER_THREAD

# ---------------------------------------------------------------------------- 4. numba's simulator

NUMBA_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from numba import cuda, float32

    relu_n, blocks = int(sys.argv[1]), int(sys.argv[2])

    @cuda.jit
    def relu(x, out, n):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        stride = cuda.blockDim.x * cuda.gridDim.x
        while i < n:
            out[i] = x[i] if x[i] > 0 else 0.0
            i += stride

    @cuda.jit
    def block_sum(x, out, n):
        s = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * 256 + t
        s[t] = x[i] if i < n else 0.0
        cuda.syncthreads()
        k = 128
        while k > 0:
            if t < k:
                s[t] += s[t + k]
            cuda.syncthreads()
            k >>= 1
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    x = np.random.default_rng(0).standard_normal(relu_n).astype(np.float32)
    out = np.empty_like(x)
    relu[1, 32](x[:32], out[:32], 32)                     # warm-up
    t0 = time.perf_counter(); relu[4, 256](x, out, relu_n); relu_s = time.perf_counter() - t0
    assert np.array_equal(out, np.maximum(x, 0))
    y = np.ones(blocks * 256, np.float32)
    sums = np.zeros(blocks, np.float32)
    block_sum[1, 256](y[:256], sums[:1], 256)             # warm-up
    t0 = time.perf_counter(); block_sum[blocks, 256](y, sums, blocks * 256); red_s = time.perf_counter() - t0
    assert np.all(sums == 256)
    print(json.dumps({"relu_s": relu_s, "reduction_s": red_s}))
""")

with console.status("the same kernels in numba's CUDA simulator (a subprocess)"):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", NUMBA_SCRIPT, str(settings.numba_relu_elements),
                           str(settings.numba_reduction_blocks)], capture_output=True, text=True, env=env,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"numba's simulator failed:\n{done.stderr[-3000:]}")
    numba = json.loads(done.stdout.strip().splitlines()[-1])

numba_relu_rate = settings.numba_relu_elements / numba["relu_s"]
numba_crossing_rate = settings.numba_reduction_blocks * 256 * BARRIERS_PER_THREAD / numba["reduction_s"]
relu_rate = settings.relu_elements / relu_each
relu_compute_rate = settings.relu_elements / max(relu_each - empty_each, 1e-9)
crossing_rate = crossings / red_each

# ---------------------------------------------------------------------------- the table


def verdict(ok: bool | None) -> str:
    return "" if ok is None else "[green]yes[/green]" if ok else "[red]no[/red]"


table = Table(title="mutagym CPU emulator (one run)")
for column, justify in (("measurement", "left"), ("value", "right"), ("target", "right"), ("met", "center")):
    table.add_column(column, justify=justify)
rows = [
    ("runner build (once per runtime version)", f"{runner_s:.2f} s", "", None),
    ("PCH build (once per runtime version)", f"{pch_s:.2f} s", "", None),
    ("first kernel compile after the PCH", f"{first_kernel_s * 1e3:.0f} ms", "", None),
    (f"median cold compile, {settings.distinct_kernels} kernels (PCH)", f"{cold_median * 1e3:.0f} ms",
     "<= 200 ms", cold_median <= 0.2),
    (f"median cache hit, {settings.cache_hits} compiles", f"{hit_median * 1e3:.2f} ms", "<= 10 ms",
     hit_median <= 0.010),
    (f"ReLU {settings.relu_elements / 2**20:.0f}M floats, one run incl. process start",
     f"{settings.relu_elements / relu_one / 1e6:.1f} M elem/s ({relu_one * 1e3:.0f} ms)", "", None),
    ("ReLU, marginal per case in a batch", f"{relu_rate / 1e6:.1f} M elem/s ({relu_each * 1e3:.0f} ms)", "", None),
    ("  of which buffer set-up and read-back (an empty kernel)", f"{empty_each * 1e3:.0f} ms", "", None),
    ("ReLU compute only (marginal minus the empty kernel)", f"{relu_compute_rate / 1e6:.1f} M elem/s", "", None),
    (f"tree reduction {settings.reduction_blocks}x256 threads x {BARRIERS_PER_THREAD} barriers, one run",
     f"{crossings / red_one / 1e6:.2f} M crossings/s ({red_one * 1e3:.0f} ms)", "", None),
    ("tree reduction, marginal per case", f"{crossing_rate / 1e6:.2f} M crossings/s ({red_each * 1e3:.0f} ms)",
     ">= 2 M/s per core", crossing_rate >= 2e6),
    (f"numba simulator: ReLU {settings.numba_relu_elements} floats", f"{numba_relu_rate / 1e3:.1f} k elem/s", "",
     None),
    (f"numba simulator: reduction {settings.numba_reduction_blocks}x256 threads",
     f"{numba_crossing_rate / 1e3:.1f} k crossings/s", "", None),
    ("speed-up over numba per element (ReLU, marginal)", f"{relu_rate / numba_relu_rate:,.0f}x", ">= 1000x",
     relu_rate / numba_relu_rate >= 1000),
    ("speed-up over numba per barrier crossing (marginal)", f"{crossing_rate / numba_crossing_rate:,.0f}x",
     ">= 1000x", crossing_rate / numba_crossing_rate >= 1000),
]
for row in rows:
    table.add_row(row[0], row[1], row[2], verdict(row[3]))
console.print(table)
