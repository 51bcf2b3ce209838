"""What the sandbox walls cost a run: the whole `run_batch` path, runner start included, before and after.

    python benchmarks/bench_walls.py                                   # about three minutes on 2 cores
    python benchmarks/bench_walls.py --before 3e163d0 --problems relu,softmax,matmul --repeats 7

Results: benchmarks/README.md, "Sandbox walls". Three arms, each a child process of its own:

- `before`: the tree at `--before` (a commit without the walls measured), exported with
  `git archive` and imported through a folder named `mutagym` that maps the package's parts onto
  it, as pyproject.toml's package-dir does;
- `after`: the working tree as it runs by default (the report channel, the empty root);
- `after, host root`: the working tree with `MUTAGYM_EMPTY_ROOT=0`, so that the difference to
  `after` is what the empty root (the namespaces, the tmpfs, the copies of the objects) costs.

Each tree has a fresh `MUTAGYM_CACHE`, so the runner and the precompiled header are built once per
tree before anything is timed, and the arms run in a rotated order round by round, so load on this
shared machine falls on all alike. Per substrate and round, a child builds a text made distinct by
a comment and times `run_batch` on the problem's preset inputs (one batch, one runner): `first`,
the median of three fresh kernels' first batches; `again`, the median of five more batches of the
last one. The
table shows each substrate's median over rounds and the ratios to `before` (target <= 1.2x).

Children a few seconds apart see the machine's load change under them; the empty root's own cost
is smaller than that noise, so a second table measures it in one process of the working tree: per
substrate, `--root-rounds` fresh kernels with `MUTAGYM_EMPTY_ROOT=auto` and as many with `0`,
alternating, each timed on its first batch; then `--root-batches` batches of one kernel per mode,
alternating (each batch starts a runner of its own, so each pays the empty root: the noise of the
compiles is gone).
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
ARMS = ("before", "after", "after, host root")

#: Runs inside each arm's child: prints one JSON line per timed substrate.
CHILD = r"""
import json, statistics, sys, time
from mutagym.rewards.generators import generate
from mutagym.runtime import RunCase, compile
from mutagym.substrates.catalog import load_problem

problems, tag = json.loads(sys.argv[1]), sys.argv[2]
warm = load_problem(problems[0]).kernel_sources()["substrate"] + "\n// warm-up\n"
problem = load_problem(problems[0])
official = generate(problem, "uniform01", preset="official", seed=0)
compile(warm, backend="cpu").run(official.inputs, problem.output_specs(official.dims), official.dims,
                                 problem.scalar_values())
for pid in problems:
    problem = load_problem(pid)
    inputs = [generate(problem, "uniform01", preset=p, seed=0) for p in problem.preset_names]
    cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, problem.scalar_values()) for g in inputs]
    first, again = [], []
    for fresh in range(3):
        kernel = compile(problem.kernel_sources()["substrate"] + f"\n// bench {tag} {time.time_ns()}\n",
                         backend="cpu")
        for run in range(1 if fresh < 2 else 6):
            t0 = time.perf_counter()
            results = kernel.run_batch(cases)
            (again if run else first).append(time.perf_counter() - t0)
            assert all(r.ok for r in results), (pid, [(r.outcome, r.message) for r in results])
    print(json.dumps({"problem": pid, "cases": len(cases), "first": statistics.median(first),
                      "again": statistics.median(again)}), flush=True)
"""

#: Runs once in the working tree: the empty root against the host's root, alternating (fresh kernels, then
#: batches of one kernel).
ROOT_CHILD = r"""
import json, os, statistics, sys, time
from mutagym.rewards.generators import generate
from mutagym.runtime import RunCase, compile
from mutagym.substrates.catalog import load_problem

problems, rounds, batches = json.loads(sys.argv[1]), *map(int, sys.argv[2].split(","))


def alternate(count, run):
    # median seconds of run() per root mode, count each, alternating (a warm-up round first)
    times = {"auto": [], "0": []}
    for r in range(count + 1):
        for mode in (("auto", "0") if r % 2 else ("0", "auto")):
            os.environ["MUTAGYM_EMPTY_ROOT"] = mode
            seconds = run()
            if r:
                times[mode].append(seconds)
    return {m: statistics.median(v) for m, v in times.items()}


def timed(kernel, cases):
    t0 = time.perf_counter()
    kernel.run_batch(cases)
    return time.perf_counter() - t0


for pid in problems:
    problem = load_problem(pid)
    inputs = [generate(problem, "uniform01", preset=p, seed=0) for p in problem.preset_names]
    cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, problem.scalar_values()) for g in inputs]
    source = problem.kernel_sources()["substrate"]
    first = alternate(rounds, lambda: timed(compile(source + f"\n// root {time.time_ns()}\n", backend="cpu"), cases))
    kernel = compile(source + f"\n// root {time.time_ns()}\n", backend="cpu")
    again = alternate(batches, lambda: timed(kernel, cases))   # every batch starts a runner of its own
    print(json.dumps({"problem": pid, "first": first, "again": again}), flush=True)
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


def run_child(package_root: Path, cache: Path, problems: list[str], tag: str, extra_env: dict,
              script: str = CHILD) -> dict[str, dict]:
    env = {**os.environ, "PYTHONPATH": str(package_root), "MUTAGYM_CACHE": str(cache), **extra_env}
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(problems), tag], env=env,
                          capture_output=True, text=True, cwd=package_root)
    if proc.returncode != 0:
        raise SystemExit(f"the {tag} child failed:\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {row["problem"]: row for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="3e163d0", help="commit without the walls measured")
    parser.add_argument("--problems", default="relu,softmax,matmul", help="substrates timed, comma-separated")
    parser.add_argument("--repeats", type=int, default=7, help="rounds; medians are reported")
    parser.add_argument("--root-rounds", type=int, default=30, help="fresh kernels per root mode, second table")
    parser.add_argument("--root-batches", type=int, default=300, help="batches of one kernel per root mode, second table")
    args = parser.parse_args()

    problems = args.problems.split(",")
    console = Console()
    console.print(f"before = {args.before}, after = working tree; {len(problems)} substrates x "
                  f"{args.repeats} rounds; load average {os.getloadavg()[0]:.1f}")
    times = {arm: {} for arm in ARMS}
    cases = {}
    with tempfile.TemporaryDirectory(prefix="mutagym-bench-walls-") as tmp:
        roots = {}
        for tag, rev in (("before", args.before), ("after", None)):
            folder = Path(tmp) / tag
            folder.mkdir()
            roots[tag] = (export_tree(rev, folder), folder / "cache")
        arms = {"before": (roots["before"], {}), "after": (roots["after"], {"MUTAGYM_EMPTY_ROOT": "auto"}),
                "after, host root": (roots["after"], {"MUTAGYM_EMPTY_ROOT": "0"})}
        start = time.perf_counter()
        for round_ in range(args.repeats):
            order = ARMS[round_ % 3:] + ARMS[:round_ % 3]
            for arm in order:
                (package_root, cache), env = arms[arm]
                for pid, row in run_child(package_root, cache, problems, f"{arm}-{round_}", env).items():
                    times[arm].setdefault(pid, {"first": [], "again": []})
                    times[arm][pid]["first"].append(row["first"])
                    times[arm][pid]["again"].append(row["again"])
                    cases[pid] = row["cases"]
            console.print(f"round {round_ + 1}/{args.repeats} done ({time.perf_counter() - start:.0f} s)")
        package_root, cache = roots["after"]
        root_rows = run_child(package_root, cache, problems, f"{args.root_rounds},{args.root_batches}", {},
                              ROOT_CHILD)

    table = Table(title="Walls: median run_batch (runner start, jail, load, run) of a fresh kernel")
    columns = ["substrate", "cases"]
    for what in ("first", "again"):
        columns += [f"{what} before", f"{what} after", "ratio", f"{what} host root", "ratio"]
    for column in columns:
        table.add_column(column, justify="left" if column == "substrate" else "right")
    ratios = {(what, arm): [] for what in ("first", "again") for arm in ARMS[1:]}
    for pid in problems:
        cells = [pid, str(cases[pid])]
        for what in ("first", "again"):
            before = statistics.median(times["before"][pid][what])
            cells.append(f"{before * 1e3:.1f} ms")
            for arm in ARMS[1:]:
                value = statistics.median(times[arm][pid][what])
                ratios[(what, arm)].append(value / before)
                cells += [f"{value * 1e3:.1f} ms", f"{value / before:.2f}x"]
        table.add_row(*cells)
    table.add_section()
    summary = ["median ratio", ""]
    for what in ("first", "again"):
        summary += ["", "", f"{statistics.median(ratios[(what, 'after')]):.2f}x", "",
                    f"{statistics.median(ratios[(what, 'after, host root')]):.2f}x"]
    table.add_row(*summary)
    console.print(table)
    root_table = Table(title=f"The empty root alone, in one process, modes alternating: median first batch of "
                             f"{args.root_rounds} fresh kernels, and of {args.root_batches} batches of one kernel")
    for column in ("substrate", "first host root", "first empty root", "difference", "ratio",
                   "again host root", "again empty root", "difference", "ratio"):
        root_table.add_column(column, justify="left" if column == "substrate" else "right")
    for pid in problems:
        cells = [pid]
        for what in ("first", "again"):
            host, empty = root_rows[pid][what]["0"], root_rows[pid][what]["auto"]
            cells += [f"{host * 1e3:.2f} ms", f"{empty * 1e3:.2f} ms", f"{(empty - host) * 1e3:+.2f} ms",
                      f"{empty / host:.2f}x"]
        root_table.add_row(*cells)
    console.print(root_table)
    console.print(f"target: <= 1.20x on a first run; load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
