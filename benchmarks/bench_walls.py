"""What the sandbox walls cost: compile time and first-run time, before and after, in one run.

    python benchmarks/bench_walls.py                     # about five minutes on 2 cores
    python benchmarks/bench_walls.py --before 2f2a6a5 --problems 15 --repeats 5

"Before" is the tree at `--before` (a commit without the walls), "after" the working tree. Each tree
is imported by a child process of its own (the tree is exported with `git archive`, and a folder
named `mutagym` maps the package's parts onto it as pyproject.toml's package-dir does), with its own
fresh `MUTAGYM_CACHE`, so the runner and the precompiled header are built once per tree before
anything is timed. The two trees' children alternate round by round, so load on this shared
machine falls on both alike.

Per substrate (the first `--problems` of the catalog, by id) and per round:
- compile: a cold `nvrtc_compile` (the compile gate) plus a cold `compile(..., backend="cpu")`
  (static checks, g++ build, object check), of a text made distinct by a comment;
- first run: one `Kernel.run` of that freshly built kernel on the problem's official inputs (the
  runner's start, its jail, loading the object, the run).
The table shows each substrate's median over the rounds, after/before ratios, and the median ratio
over substrates (target <= 1.3x for both).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("runtime", "substrates", "mutants", "rewards", "envs", "rules", "configs")

#: Runs inside each tree's child: prints one JSON line per timed substrate.
CHILD = r"""
import json, sys, time
from mutagym.rewards.generators import generate
from mutagym.runtime import compile
from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.substrates.catalog import load_problem

problems, tag = json.loads(sys.argv[1]), sys.argv[2]
warm = load_problem(problems[0]).kernel_sources()["substrate"]
nvrtc_compile(warm + "\n// warm-up\n"); compile(warm + "\n// warm-up\n", backend="cpu")
for pid in problems:
    problem = load_problem(pid)
    source = problem.kernel_sources()["substrate"] + f"\n// bench {tag} {time.time_ns()}\n"
    official = generate(problem, "uniform01", preset="official", seed=0)
    t0 = time.perf_counter()
    nvrtc_compile(source)
    kernel = compile(source, backend="cpu")
    t1 = time.perf_counter()
    result = kernel.run(official.inputs, problem.output_specs(official.dims), official.dims,
                        problem.scalar_values())
    t2 = time.perf_counter()
    assert result.ok, (pid, result.outcome, result.message)
    print(json.dumps({"problem": pid, "compile": t1 - t0, "run": t2 - t1}), flush=True)
"""


def export_tree(rev: str | None, into: Path) -> Path:
    """The tree at *rev* (the working tree when None) as an importable `mutagym` package root."""
    tree = into / "tree"
    if rev is None:
        tree = ROOT
    else:
        tree.mkdir()
        archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        tar_path = into / "tree.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tree, filter="data")
    package = into / "pkg" / "mutagym"
    package.mkdir(parents=True)
    for item in (tree / "mutagym").iterdir():
        (package / item.name).symlink_to(item)
    for part in PARTS:
        (package / part).symlink_to(tree / part)
    return package.parent


def run_child(package_root: Path, cache: Path, problems: list[str], tag: str) -> dict[str, dict]:
    env = {**os.environ, "PYTHONPATH": str(package_root), "MUTAGYM_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(problems), tag], env=env,
                          capture_output=True, text=True, cwd=package_root)
    if proc.returncode != 0:
        raise SystemExit(f"the {tag} child failed:\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {row["problem"]: row for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="2f2a6a5", help="commit without the walls")
    parser.add_argument("--problems", type=int, default=12, help="substrates timed (catalog order)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; medians are reported")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from mutagym.substrates.catalog import list_problems
    problems = list_problems()[:args.problems]
    console = Console()
    console.print(f"before = {args.before}, after = working tree; {len(problems)} substrates x "
                  f"{args.repeats} rounds; load average {os.getloadavg()[0]:.1f}")
    times = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory(prefix="mutagym-bench-walls-") as tmp:
        roots = {}
        for tag, rev in (("before", args.before), ("after", None)):
            folder = Path(tmp) / tag
            folder.mkdir()
            roots[tag] = (export_tree(rev, folder), folder / "cache")
        start = time.perf_counter()
        for round_ in range(args.repeats):
            order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
            for tag in order:
                package_root, cache = roots[tag]
                for pid, row in run_child(package_root, cache, problems, f"{tag}-{round_}").items():
                    times[tag].setdefault(pid, {"compile": [], "run": []})
                    times[tag][pid]["compile"].append(row["compile"])
                    times[tag][pid]["run"].append(row["run"])
            console.print(f"round {round_ + 1}/{args.repeats} done ({time.perf_counter() - start:.0f} s)")

    table = Table(title="Walls: median cold compile (NVRTC gate + CPU build) and first run")
    for column in ("substrate", "compile before", "compile after", "ratio", "first run before",
                   "first run after", "ratio"):
        table.add_column(column, justify="left" if column == "substrate" else "right")
    ratios = {"compile": [], "run": []}
    for pid in problems:
        cells = [pid]
        for what in ("compile", "run"):
            before = statistics.median(times["before"][pid][what])
            after = statistics.median(times["after"][pid][what])
            ratios[what].append(after / before)
            cells += [f"{before * 1e3:.0f} ms", f"{after * 1e3:.0f} ms", f"{after / before:.2f}x"]
        table.add_row(*cells)
    table.add_section()
    table.add_row("median ratio", "", "", f"{statistics.median(ratios['compile']):.2f}x", "", "",
                  f"{statistics.median(ratios['run']):.2f}x")
    console.print(table)
    console.print(f"target: <= 1.30x for both; load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
