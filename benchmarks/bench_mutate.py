"""Benchmark mutant generation and the compile gate (NVRTC + CPU build + quarantine run).

Recorded results live in benchmarks/README.md, with the command that produced them:

    python benchmarks/bench_mutate.py            # a few minutes on 2 cores

Top to bottom: generate the pool for the whole catalog (timed); then judge every mutant of a fixed
set of problems twice from an empty build cache, once with 1 worker process and once with 2, and
print mutants per second for each and the scaling ratio. Each judgement is a real NVRTC compile, a real
g++ build against the precompiled emulation header, and one sandboxed run on the official inputs.
Target (the mutation-engine issue): generation plus compile gate >= 10 mutants/s on this 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from rich.console import Console
from rich.table import Table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="relu,softmax,layernorm",
                        help="problems whose mutants are judged (comma-separated)")
    args = parser.parse_args()
    console = Console()

    cache = tempfile.mkdtemp(prefix="mutagym-bench-mutate-")
    os.environ["MUTAGYM_CACHE"] = cache          # spawned workers inherit it: every build is cold
    from mutagym.mutants.generate import generate_pool
    from mutagym.mutants.pool import build_pool

    start = time.perf_counter()
    pool = generate_pool()
    generation_s = time.perf_counter() - start
    problems = args.problems.split(",")

    rows = []
    for workers in (1, 2):
        shutil.rmtree(cache, ignore_errors=True)
        out = tempfile.mkdtemp(prefix="mutagym-bench-pool-")
        # Warm the runner and the precompiled header outside the timing (built once per version).
        from mutagym.runtime.toolchain import header_path, runner_path
        header_path.cache_clear()
        runner_path.cache_clear()
        header_path()
        runner_path()
        start = time.perf_counter()
        build = build_pool(out, problems, workers=workers, progress=False)
        seconds = time.perf_counter() - start
        rows.append((workers, build.judged_now, seconds))
        shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)

    settings = Table(title="settings")
    settings.add_column("setting")
    settings.add_column("value")
    settings.add_row("catalog mutants", str(len(pool.mutants)))
    settings.add_row("problems judged", ", ".join(problems))
    settings.add_row("cpu cores", str(os.cpu_count()))
    console.print(settings)

    table = Table(title="mutant generation and compile gate (one run)")
    for col in ("measurement", "value", "target", "met"):
        table.add_column(col)
    table.add_row("generate the whole catalog's pool", f"{len(pool.mutants) / generation_s:,.0f} mutants/s "
                  f"({generation_s:.1f} s)", "", "")
    for workers, judged, seconds in rows:
        rate = judged / seconds
        target = ">= 10 mutants/s" if workers == 2 else ""
        met = ("yes" if rate >= 10 else "no") if workers == 2 else ""
        table.add_row(f"gate + quarantine, {workers} worker(s), cold cache", f"{rate:.1f} mutants/s "
                      f"({judged} in {seconds:.1f} s)", target, met)
    table.add_row("scaling 2 workers / 1", f"{(rows[1][1] / rows[1][2]) / (rows[0][1] / rows[0][2]):.2f}x", "", "")
    console.print(table)


if __name__ == "__main__":
    main()
