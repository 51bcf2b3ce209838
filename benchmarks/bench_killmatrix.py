"""Kill-matrix throughput: cells per second on 1 and 2 Ray workers, in one run (results: README.md).

    python benchmarks/bench_killmatrix.py [--copies 6] [--repeats 1]
    python benchmarks/bench_killmatrix.py --pool /tmp/fullpool/mutants.parquet --per-problem 2

Fixed workload (independent of the rule files): four hand-written mutants of catalog substrates
(relu returning x, relu reading past its tail, softmax without max-subtraction, layernorm without
weight), each in `--copies` textual copies (a trailing comment makes every copy a distinct
source, so each is compiled and run on its own), over 4 generators x 2 presets (`tiny`,
`remainder`) x 2 schedules. The compile cache is warmed first, so both rows time running cells,
not g++. Each row starts its own local Ray cluster (`num_cpus` = workers) and writes a fresh
folder; only the mutants' Ray phase is timed (the validity gate before it is excluded).
The table prints cells/s and the 2-worker / 1-worker ratio.

With `--pool` it measures the real catalog instead: a stratified sample of `--per-problem`
compilable mutants of every problem (evenly spaced by id), every generator and preset, seed 0,
both schedules, on `--workers` Ray workers, timing the validity gate (all problems) and the Ray
phase, and projects the whole pool: gate time + (every compilable mutant x its problem's cells per
sampled mutant, the schedule plan included) / the sample's cells/s.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter

from rich.console import Console
from rich.table import Table

from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, load_mutants, run_killmatrix
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


def stratified_sample(pool_path: str, per_problem: int) -> tuple[list[MutantRecord], dict[str, list[MutantRecord]]]:
    """*per_problem* compilable mutants of every problem of the pool, evenly spaced by id; and the
    pool's mutants by problem."""
    by_problem: dict[str, list[MutantRecord]] = {}
    for m in sorted(load_mutants(pool=pool_path), key=lambda m: m.id):
        by_problem.setdefault(m.problem, []).append(m)
    sample = [ms[k * len(ms) // per_problem] for ms in by_problem.values()
              for k in range(min(per_problem, len(ms)))]
    return sample, by_problem


def catalog(pool_path: str, per_problem: int, workers: int, console: Console) -> None:
    """Measure a stratified sample of the real pool and project the whole pool's wall time."""
    sample, by_problem = stratified_sample(pool_path, per_problem)
    everything = [m for ms in by_problem.values() for m in ms]
    for m in sample:                                 # warm the on-disk compile cache
        compile(m.source, backend="cpu")
    with tempfile.TemporaryDirectory() as out:
        os.environ.pop("RAY_ADDRESS", None)
        t0 = time.perf_counter()
        result = run_killmatrix(sample, KillMatrixSettings(out=out, num_cpus=workers, progress=False))
        total = time.perf_counter() - t0
    load = os.getloadavg()
    # cells per mutant of each problem as the sample ran them (the schedule plan included)
    problem_of = {m.id: m.problem for m in sample}
    cells = Counter(problem_of[m] for m in result.outcomes.column("mutant_id").to_pylist())
    sampled = Counter(m.problem for m in sample)
    full_cells = round(sum(len(ms) * cells[p] / sampled[p] for p, ms in by_problem.items() if sampled[p]))
    rate = result.computed_cells / result.kill_seconds
    gate_s = total - result.kill_seconds
    projected = gate_s + full_cells / rate
    table = Table(title=f"kill matrix on the catalog: {len(sample)} of {len(everything)} mutants "
                        f"({per_problem} per problem), {workers} Ray workers, os.cpu_count() = {os.cpu_count()}")
    for col in ("sample cells", "gate + driver s", "Ray phase s", "cells/s", "full-pool cells",
                "projected full run", "load average (1, 5, 15 min)"):
        table.add_column(col, justify="right")
    table.add_row(str(result.computed_cells), f"{gate_s:.1f}", f"{result.kill_seconds:.1f}", f"{rate:.1f}",
                  f"{full_cells:,}", f"{projected / 60:.1f} min", " ".join(f"{x:.2f}" for x in load))
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; the best is reported")
    parser.add_argument("--pool", help="a mutant pool Parquet file: measure the real catalog instead")
    parser.add_argument("--per-problem", type=int, default=2, help="with --pool: mutants per problem")
    parser.add_argument("--workers", type=int, default=2, help="with --pool: Ray workers")
    args = parser.parse_args()
    console = Console(width=160)
    if args.pool:
        catalog(args.pool, args.per_problem, args.workers, console)
        return
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
