"""Where the kill matrix's time goes, problem by problem (results: README.md).

    python -m mutagym mutate --out /tmp/pool                      # the pool (once; builds every mutant)
    python benchmarks/bench_killmatrix_profile.py --pool /tmp/pool/mutants.parquet --per-problem 2

Per problem of the pool: its validity gate (`killmatrix._gate`, every candidate input of the default
settings), then `--per-problem` compilable mutants (evenly spaced by id) each judged as a kill-matrix
worker judges it (`killmatrix.run_task` over every valid input under the schedule plan), in this
process, one after the other, with the compile cache as `mutate` left it. The table shows the
inputs and cells per mutant, the seconds per mutant (wall) and how much of it the emulator's child
processes spent (CPU), and the mutants x seconds the whole pool would take on one worker, most
first, with the totals: the problems to look at when the matrix is slow. One worker process: on
two Ray workers the matrix takes about half the total.
"""

from __future__ import annotations

import argparse
import resource
import time

from rich.console import Console
from rich.table import Table

from mutagym.mutants.killmatrix import KillMatrixSettings, _gate, _schedules_of, _Task, load_mutants, run_task
from mutagym.substrates.catalog import load_problem


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def profile(problem: str, mutants: list, per_problem: int, settings: KillMatrixSettings) -> dict:
    """One problem: gate seconds, then per sampled mutant the wall and child-CPU seconds."""
    t0 = time.perf_counter()
    _, bundle = _gate(load_problem(problem), settings)
    gate_s = time.perf_counter() - t0
    ids = bundle["ids"]
    cells = tuple((s, tuple(i for i, iid in enumerate(ids) if s in _schedules_of(bundle["elements"][iid], settings)))
                  for s in settings.schedules)
    sample = [mutants[k * len(mutants) // per_problem] for k in range(min(per_problem, len(mutants)))]
    wall = child = 0.0
    for m in sample:
        task = _Task(m.id, m.source, m.problem, cells, settings.backend, settings.timeout_s, None)
        c0, w0 = _child_cpu(), time.perf_counter()
        run_task(task, {problem: bundle})
        wall += time.perf_counter() - w0
        child += _child_cpu() - c0
    n = len(sample)
    return {"problem": problem, "mutants": len(mutants), "inputs": len(ids), "cells": sum(len(i) for _, i in cells),
            "gate_s": gate_s, "task_s": wall / n, "child_s": child / n, "pool_min": wall / n * len(mutants) / 60}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", required=True, help="a mutant pool Parquet file (`mutagym mutate`)")
    parser.add_argument("--per-problem", type=int, default=2, help="mutants timed per problem")
    parser.add_argument("--problems", nargs="*", help="only these problems (default: every problem of the pool)")
    parser.add_argument("--top", type=int, default=25, help="rows shown (the totals count every problem)")
    args = parser.parse_args()
    by_problem: dict[str, list] = {}
    for m in sorted(load_mutants(pool=args.pool), key=lambda m: m.id):
        if not args.problems or m.problem in args.problems:
            by_problem.setdefault(m.problem, []).append(m)
    if not by_problem:
        raise SystemExit(f"no compilable mutant of {args.problems or 'any problem'} in {args.pool}")
    settings = KillMatrixSettings(out="unused", progress=False)
    console = Console(width=160)
    rows = []
    with console.status("") as status:
        for k, (problem, mutants) in enumerate(sorted(by_problem.items())):
            status.update(f"{problem} ({k + 1}/{len(by_problem)})")
            rows.append(profile(problem, mutants, args.per_problem, settings))
    rows.sort(key=lambda r: -r["pool_min"])
    table = Table(title=f"kill matrix time by problem: {args.per_problem} mutants each, one worker process")
    for col in ("problem", "mutants", "valid inputs", "cells / mutant", "s / mutant", "child CPU share",
                "pool min (1 worker)", "share", "gate s"):
        table.add_column(col, justify="left" if col == "problem" else "right")
    total = sum(r["pool_min"] for r in rows)
    for r in rows[:args.top]:
        table.add_row(r["problem"], str(r["mutants"]), str(r["inputs"]), str(r["cells"]), f"{r['task_s']:.2f}",
                      f"{r['child_s'] / r['task_s']:.0%}", f"{r['pool_min']:.1f}", f"{r['pool_min'] / total:.1%}",
                      f"{r['gate_s']:.1f}")
    mutants = sum(r["mutants"] for r in rows)
    child = sum(r["child_s"] * r["mutants"] for r in rows) / sum(r["task_s"] * r["mutants"] for r in rows)
    table.add_row(f"all {len(rows)} problems", str(mutants), "", "", "", f"{child:.0%}", f"{total:.1f}", "100%",
                  f"{sum(r['gate_s'] for r in rows):.0f}", end_section=True)
    console.print(table)


if __name__ == "__main__":
    main()
