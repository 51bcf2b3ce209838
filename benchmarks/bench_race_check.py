"""What the race, state and spin checks cost the kill matrix, and what they kill, in one run.

    python -m mutagym mutate --out /tmp/racepool                       # the pool (once)
    python benchmarks/bench_race_check.py --pool /tmp/racepool/mutants.parquet --per-problem 2

A stratified sample of the pool (`--per-problem` compilable mutants of every problem, evenly spaced
by id, as bench_killmatrix.py's `--pool` mode) goes through the whole kill matrix (validity gate,
every generator and preset, seed 0, both schedules) once with the checks off
(`MUTAGYM_RACE_CHECK=0`) and once on, `--repeats` times in alternation (off, on, on, off, ...) so
that load on this shared machine falls on both alike. Each run is a child process of its own with a
fresh compile cache, so it pays for building its mutants as the real kill matrix does (instrumented
builds are slower to compile and to run). The table shows each mode's best wall time, cells/s, and
the mutants killed (a mutant counts as killed when some valid input kills it); the on/off ratio of
wall times is the cost (target <= 1.5x).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

CHILD = r"""
import json, sys, time, tempfile
sys.path.insert(0, sys.argv[3])
from bench_killmatrix import stratified_sample
from mutagym.mutants.killmatrix import KillMatrixSettings, run_killmatrix
sample, _ = stratified_sample(sys.argv[1], int(sys.argv[2]))
with tempfile.TemporaryDirectory() as out:
    t0 = time.perf_counter()
    result = run_killmatrix(sample, KillMatrixSettings(out=out, num_cpus=2, progress=False,
                                                       **json.loads(sys.argv[4])))
    wall = time.perf_counter() - t0
cells = result.outcomes.to_pydict()
pairs = sorted({(m, i) for m, i, c in zip(cells["mutant_id"], cells["input_id"], cells["outcome"]) if c != "ok"})
print(json.dumps({"wall": wall, "cells": result.computed_cells, "ray": result.kill_seconds,
                  "mutants": len(sample), "killed": sorted({m for m, _ in pairs}), "pairs": pairs}))
"""


def run_mode(race: bool, pool: str, per_problem: int, settings: dict | None = None) -> dict:
    """One kill matrix of the sample in a child process with a fresh compile cache; *settings*
    override `KillMatrixSettings` fields."""
    with tempfile.TemporaryDirectory(prefix="mg-race-bench-") as cache:
        env = {**os.environ, "MUTAGYM_RACE_CHECK": "1" if race else "0", "MUTAGYM_CACHE": cache}
        env.pop("RAY_ADDRESS", None)
        proc = subprocess.run([sys.executable, "-c", CHILD, pool, str(per_problem), str(Path(__file__).parent),
                               json.dumps(settings or {})],
                              env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the run (race checks {'on' if race else 'off'}, settings {settings}) failed:\n"
                         f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", required=True, help="a mutant pool Parquet file (mutagym mutate)")
    parser.add_argument("--per-problem", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of (off, on) or (on, off)")
    args = parser.parse_args()
    console = Console(width=150)
    runs: dict[bool, list[dict]] = {False: [], True: []}
    for round_ in range(args.repeats):
        for race in ((False, True) if round_ % 2 == 0 else (True, False)):
            console.print(f"round {round_ + 1}: checks {'on' if race else 'off'} ...")
            runs[race].append(run_mode(race, args.pool, args.per_problem))
    best = {race: min(rs, key=lambda r: r["wall"]) for race, rs in runs.items()}
    load = os.getloadavg()
    table = Table(title=f"kill matrix of a stratified sample ({best[False]['mutants']} mutants, "
                        f"{args.per_problem} per problem), 2 Ray workers, cold compile cache, best of "
                        f"{args.repeats}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for col in ("race checks", "cells", "wall s", "Ray phase s", "cells/s", "mutants killed", "vs off"):
        table.add_column(col, justify="right")
    for race in (False, True):
        r = best[race]
        table.add_row("on" if race else "off", f"{r['cells']:,}", f"{r['wall']:.1f}", f"{r['ray']:.1f}",
                      f"{r['cells'] / r['ray']:.1f}", str(len(r["killed"])),
                      f"{r['wall'] / best[False]['wall']:.2f}x")
    console.print(table)
    gained = sorted(set(best[True]["killed"]) - set(best[False]["killed"]))
    lost = sorted(set(best[False]["killed"]) - set(best[True]["killed"]))
    console.print(f"killed only with the checks on: {len(gained)} {gained[:12]}")
    console.print(f"killed only with the checks off: {len(lost)} {lost[:12]}")


if __name__ == "__main__":
    main()
