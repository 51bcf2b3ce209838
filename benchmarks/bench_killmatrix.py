"""Kill-matrix throughput: cells per second on 1 and 2 Ray workers, in one run (results: README.md).

    python benchmarks/bench_killmatrix.py [--copies 6] [--repeats 1]

Fixed workload (independent of the rule files): four hand-written mutants of catalog substrates
(relu returning x, relu reading past its tail, softmax without max-subtraction, layernorm without
weight), each in `--copies` textual copies (a trailing comment makes every copy a distinct
source, so each is compiled and run on its own), over 4 generators x 2 presets (`tiny`,
`remainder`) x 2 schedules. The compile cache is warmed first, so both rows time running cells,
not g++. Each row starts its own local Ray cluster (`num_cpus` = workers) and writes a fresh
folder; only the Ray phase is timed (the validity gate runs in the driver and is excluded).
The table prints cells/s and the 2-worker / 1-worker ratio.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from rich.console import Console
from rich.table import Table

from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, run_killmatrix
from mutagym.runtime import compile
from mutagym.substrates.catalog import load_problem

WORKLOAD = dict(generators=("uniform01", "sign_mixed", "large_offset", "affine_perturbed"),
                presets=("tiny", "remainder"), schedules=("ascending", "descending"))


def _sub(problem: str, old: str, new: str) -> str:
    src = load_problem(problem).kernel_sources()["substrate"]
    assert old in src, (problem, old)
    return src.replace(old, new)


def mutants(copies: int) -> list[MutantRecord]:
    base = [
        ("relu-returns-x", "relu", "input_domain", _sub("relu", "return fmaxf(v, 0.0f);", "return v;")),
        ("relu-tail-oob", "relu", "boundary", _sub("relu", "out[i] = relu_op(x[i]);", "out[i] = relu_op(x[i + 4]);")),
        ("softmax-no-max", "softmax", "input_domain", _sub("softmax", "expf(xr[c] - m)", "expf(xr[c])")),
        ("layernorm-no-weight", "layernorm", "arithmetic",
         _sub("layernorm", "xhat * weight[c] + bias[c]", "xhat + bias[c]")),
    ]
    return [MutantRecord(f"{mid}-{k}", problem, family, "bench", f"{src}\n// copy {k}\n")
            for mid, problem, family, src in base for k in range(copies)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; the best is reported")
    args = parser.parse_args()
    console = Console()
    pool = mutants(args.copies)
    for m in pool:                                   # warm the on-disk compile cache
        compile(m.source, backend="cpu")

    rows = []
    for workers in (1, 2):
        best = None
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as out:
                os.environ.pop("RAY_ADDRESS", None)
                t0 = time.perf_counter()
                result = run_killmatrix(pool, KillMatrixSettings(out=out, num_cpus=workers, progress=False,
                                                                 **WORKLOAD))
                total = time.perf_counter() - t0
            if best is None or result.kill_seconds < best[1]:
                best = (result.computed_cells, result.kill_seconds, total)
        rows.append((workers, *best))

    table = Table(title=f"kill matrix throughput: {len(pool)} mutants x "
                        f"{rows[0][1] // len(pool) // len(WORKLOAD['schedules'])} valid inputs x "
                        f"{len(WORKLOAD['schedules'])} schedules, os.cpu_count() = {os.cpu_count()}")
    for col in ("Ray workers", "cells", "Ray phase s", "cells/s", "vs 1 worker", "whole run s"):
        table.add_column(col, justify="right")
    base_rate = rows[0][1] / rows[0][2]
    for workers, cells, seconds, total in rows:
        rate = cells / seconds
        table.add_row(str(workers), str(cells), f"{seconds:.2f}", f"{rate:.1f}", f"{rate / base_rate:.2f}x",
                      f"{total:.1f}")
    console.print(table)
    console.print(f"scaling ratio (2 workers / 1 worker): {rows[1][1] / rows[1][2] / base_rate:.2f}")


if __name__ == "__main__":
    main()
