"""What the emulator's tensor cores cost: matmul_fp16_wmma's substrate against matmul_fp16's.

    python benchmarks/bench_wmma.py              # about half a minute on 2 cores

Both substrates run the official shape (m = 64, k = 256, n = 64) on the same random float16
inputs, compiled once each on the CPU backend, with and without the race checks; each run is
timed around `Kernel.run` (child start, buffers and the launch), alternating the two kernels so
that a change of load hits both. The table gives the median seconds and the ratio wmma / scalar,
the number benchmarks/README.md records ("Tensor-core substrate and rules").
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mutagym.runtime import compile
from mutagym.substrates import load_problem

PROBLEMS = ("matmul_fp16", "matmul_fp16_wmma")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each kernel and build")
    args = parser.parse_args()
    dims = load_problem(PROBLEMS[0]).preset("official")
    rng = np.random.default_rng(0)
    inputs = {"a": rng.standard_normal((dims["m"], dims["k"])).astype(np.float16),
              "b": rng.standard_normal((dims["k"], dims["n"])).astype(np.float16)}
    print(f"official shape {dims}, median of {args.runs} runs")
    print(f"{'build':<14}{'matmul_fp16 s':>15}{'wmma s':>10}{'ratio':>8}")
    for race_check in (False, True):
        kernels = [compile(load_problem(p).kernel_sources()["substrate"], backend="cpu",
                           race_check=race_check) for p in PROBLEMS]
        outputs = load_problem(PROBLEMS[0]).output_specs(dims)
        times: list[list[float]] = [[], []]
        for _ in range(args.runs):
            for i, kernel in enumerate(kernels):
                start = time.perf_counter()
                result = kernel.run(inputs, outputs, dims)
                times[i].append(time.perf_counter() - start)
                if result.outcome != "ok":
                    raise SystemExit(f"{PROBLEMS[i]}: {result.outcome}: {result.message}")
        scalar, wmma = (statistics.median(t) for t in times)
        name = "race-checked" if race_check else "plain"
        print(f"{name:<14}{scalar:>15.3f}{wmma:>10.3f}{wmma / scalar:>8.2f}")


if __name__ == "__main__":
    main()
