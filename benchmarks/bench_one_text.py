"""What "one text, one meaning" and the instrumentation check cost a new text (issue 30, items 1-2).

    python benchmarks/bench_one_text.py                          # about two minutes on 2 cores
    python benchmarks/bench_one_text.py --before 3e163d0 --problems 15 --repeats 7

Recorded results: benchmarks/README.md ("One text, one meaning: `bench_one_text.py`").

"Before" is the tree at `--before` (3e163d0: NVRTC and the emulator compile the raw text), "after"
the working tree (both compile the source check's output, with the context object linked in; the
race-checked object is disassembled and checked). Each tree is imported by a child process of its
own (`bench_walls.export_tree`) with a fresh `MUTAGYM_CACHE`, warmed up once (runner, precompiled
header, NVRTC helper). The parent asks the two children for one substrate at a time, before and
after back to back (who goes first alternates), so a change of load on this shared machine falls
on both alike. Each answer is one text made distinct by a device variable of its own (every cache
cold; a comment would not do: what is compiled, and what the caches are keyed on, is the
preprocessed text, without comments), timed in three parts:
- check: `parse_submission` (raw checks, the preprocessed check: one bounded `g++ -E`, and, after,
  the device text and the emulator-name check);
- gate: `nvrtc_gate` (NVRTC out of process);
- build: `compile(..., backend="cpu")` of the same text (its parse is cached): the race-checked
  and the plain g++ builds, the object wall and, after, the instrumentation check, which is also
  timed alone on the same object ("instr.", inside "build").
The table shows each part's median over the rounds and the after/before ratio of the sums.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench_walls import export_tree

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("check", "gate", "build", "instr")

#: Runs inside each tree's child: warms up on the problem in argv, prints "ready", then answers
#: each problem id read from stdin with one JSON line.
CHILD = r"""
import json, sys, time
from mutagym.runtime import compile, parse_submission
from mutagym.runtime.nvrtc_gate import nvrtc_gate
from mutagym.substrates.catalog import load_problem
try:
    from mutagym.runtime.instrumented import check_instrumented
except ImportError:   # the tree before
    check_instrumented = None

warm = load_problem(sys.argv[1]).kernel_sources()["substrate"] + "\n__device__ int bench_warm;\n"
nvrtc_gate(warm); compile(warm, backend="cpu")
print("ready", flush=True)
for pid in map(str.strip, sys.stdin):
    source = load_problem(pid).kernel_sources()["substrate"] + f"\n__device__ int bench_{time.time_ns()};\n"
    t0 = time.perf_counter()
    parse_submission(source)
    t1 = time.perf_counter()
    nvrtc_gate(source)
    t2 = time.perf_counter()
    kernel = compile(source, backend="cpu")
    t3 = time.perf_counter()
    if check_instrumented is not None:
        check_instrumented(kernel._impl.object_path)
    t4 = time.perf_counter()
    print(json.dumps({"check": t1 - t0, "gate": t2 - t1, "build": t3 - t2, "instr": t4 - t3}), flush=True)
"""


class Child:
    """One tree's child process, asked for one substrate at a time."""

    def __init__(self, tag: str, package_root: Path, cache: Path, warm_problem: str, log: Path):
        self.tag, self.log = tag, log
        env = {**os.environ, "PYTHONPATH": str(package_root), "MUTAGYM_CACHE": str(cache)}
        with open(log, "w") as stderr:
            self.proc = subprocess.Popen([sys.executable, "-c", CHILD, warm_problem], env=env, cwd=package_root,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
        self._answer()

    def time(self, problem: str) -> dict[str, float]:
        """The child's timings (seconds per part) of one new text of *problem*."""
        self.proc.stdin.write(problem + "\n")
        self.proc.stdin.flush()
        return json.loads(self._answer())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()

    def _answer(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.tag} child failed:\n{self.log.read_text()[-3000:]}")
        return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="3e163d0", help="commit before issue 30's items 1-2")
    parser.add_argument("--problems", type=int, default=15, help="substrates timed (catalog order)")
    parser.add_argument("--repeats", type=int, default=7, help="rounds; medians are reported")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from mutagym.substrates.catalog import list_problems
    problems = list_problems()[:args.problems]
    console = Console(width=150)
    console.print(f"before = {args.before}, after = working tree; {len(problems)} substrates x "
                  f"{args.repeats} rounds; load average {os.getloadavg()[0]:.1f}")
    times = {tag: {pid: {p: [] for p in PARTS} for pid in problems} for tag in ("before", "after")}
    with tempfile.TemporaryDirectory(prefix="mutagym-bench-one-text-") as tmp:
        children = {}
        for tag, rev in (("before", args.before), ("after", None)):
            folder = Path(tmp) / tag
            folder.mkdir()
            children[tag] = Child(tag, export_tree(rev, folder), folder / "cache", problems[0], folder / "stderr")
        start = time.perf_counter()
        for round_ in range(args.repeats):
            for i, pid in enumerate(problems):
                for tag in (("before", "after") if (round_ + i) % 2 == 0 else ("after", "before")):
                    for part, seconds in children[tag].time(pid).items():
                        times[tag][pid][part].append(seconds)
            console.print(f"round {round_ + 1}/{args.repeats} done ({time.perf_counter() - start:.0f} s)")
        for child in children.values():
            child.close()

    table = Table(title="A new text through the judge's compile path: medians (ms), before / after")
    for column in ("substrate", "check", "gate", "build", "instr.", "total before", "total after", "ratio"):
        table.add_column(column, justify="left" if column == "substrate" else "right", no_wrap=True)
    totals = {"before": 0.0, "after": 0.0}
    ratios = []
    for pid in problems:
        med = {tag: {p: statistics.median(times[tag][pid][p]) * 1e3 for p in PARTS} for tag in times}
        total = {tag: sum(med[tag][p] for p in ("check", "gate", "build")) for tag in times}
        for tag in totals:
            totals[tag] += total[tag]
        ratios.append(total["after"] / total["before"])
        table.add_row(pid, *(f"{med['before'][p]:.0f} / {med['after'][p]:.0f}" for p in ("check", "gate", "build")),
                      f"{med['after']['instr']:.1f}", f"{total['before']:.0f}", f"{total['after']:.0f}",
                      f"{ratios[-1]:.2f}x")
    table.add_section()
    table.add_row("all substrates", "", "", "", "", f"{totals['before']:.0f}", f"{totals['after']:.0f}",
                  f"{totals['after'] / totals['before']:.2f}x")
    table.add_row("median ratio", "", "", "", "", "", "", f"{statistics.median(ratios):.2f}x")
    console.print(table)
    console.print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
