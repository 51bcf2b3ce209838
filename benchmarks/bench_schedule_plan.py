"""What running the later schedules on cheap inputs only saves the kill matrix, and what it loses.

    python -m mutagym mutate --out /tmp/racepool                       # the pool (once)
    python benchmarks/bench_schedule_plan.py --pool /tmp/racepool/mutants.parquet --per-problem 2

The stratified sample of bench_race_check.py goes through the whole kill matrix (race checks on)
with every schedule on every input (`later_schedules_max_elements=None`) and with the default plan
(the second schedule only where the largest tensor has at most 2^12 elements), `--repeats` times in
alternation, each run a child process with a fresh compile cache. The table shows each plan's best
wall time, its cells, the mutants killed and the (mutant, input) kills; the full/plan ratio is the
saving, and the mutants and kills only the full plan finds are the loss.
"""

from __future__ import annotations

import argparse
import os

from rich.console import Console
from rich.table import Table

from bench_race_check import run_mode

PLANS = {"every schedule on every input": {"later_schedules_max_elements": None}, "default plan": {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", required=True, help="a mutant pool Parquet file (mutagym mutate)")
    parser.add_argument("--per-problem", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of (full, plan) or (plan, full)")
    args = parser.parse_args()
    console = Console(width=150)
    runs: dict[str, list[dict]] = {name: [] for name in PLANS}
    for round_ in range(args.repeats):
        for name in (list(PLANS) if round_ % 2 == 0 else list(PLANS)[::-1]):
            console.print(f"round {round_ + 1}: {name} ...")
            runs[name].append(run_mode(True, args.pool, args.per_problem, PLANS[name]))
    best = {name: min(rs, key=lambda r: r["wall"]) for name, rs in runs.items()}
    full, plan = best["every schedule on every input"], best["default plan"]
    load = os.getloadavg()
    table = Table(title=f"kill matrix of a stratified sample ({full['mutants']} mutants, {args.per_problem} per "
                        f"problem), race checks on, 2 Ray workers, cold compile cache, best of {args.repeats}; "
                        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for col in ("plan", "cells", "wall s", "Ray phase s", "mutants killed", "(mutant, input) kills", "vs full"):
        table.add_column(col, justify="right")
    for name, r in best.items():
        table.add_row(name, f"{r['cells']:,}", f"{r['wall']:.1f}", f"{r['ray']:.1f}", str(len(r["killed"])),
                      f"{len(r['pairs']):,}", f"{r['wall'] / full['wall']:.2f}x")
    console.print(table)
    lost = sorted(set(full["killed"]) - set(plan["killed"]))
    lost_pairs = {tuple(p) for p in full["pairs"]} - {tuple(p) for p in plan["pairs"]}
    console.print(f"mutants killed only with every schedule on every input: {len(lost)} {lost[:12]}")
    console.print(f"(mutant, input) kills only with every schedule on every input: {len(lost_pairs)}")


if __name__ == "__main__":
    main()
