"""The corners of every problem's declared domain: does every correct kernel (and the reference)
run there, and how long does the slowest take? (issue 31 item 3)

Results and the command: benchmarks/README.md, "The corners of the declared domain". For every
problem and every corner of `rewards.shapes.corners` (every dim at its least size, and each dim
at its declared maximum with the others at their least), one `sign_mixed` input runs through the
fp64 reference and every correct kernel in ascending order (the fastest of `--repeat` runs of the
batch). A corner whose slowest kernel takes longer than `rewards.shapes.CASE_SECONDS`, or that a
correct kernel fails, is flagged: its dim's declared maximum is more than the gate can promise.

    python benchmarks/bench_corners.py                      # every problem
    python benchmarks/bench_corners.py --problems relu softmax
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.progress import track
from rich.table import Table

from mutagym.rewards.generators import dims_preset
from mutagym.rewards.checker import InputRef
from mutagym.rewards.judging import comparator_for, judge_kernel
from mutagym.rewards.shapes import CASE_SECONDS, corners, cost
from mutagym.runtime import compile
from mutagym.substrates.catalog import list_problems, load_problem


def measure(problem_id: str, repeat: int) -> list[dict]:
    """One row per corner: dims, elements, the reference's and the slowest kernel's seconds, failures."""
    p = load_problem(problem_id)
    c = comparator_for(p)
    kernels = {name: compile(src) for name, src in p.kernel_sources().items()}
    rows = []
    for corner, dims in corners(p).items():
        ref = InputRef(generator="sign_mixed", preset=dims_preset(dims), seed=0)
        start = time.perf_counter()
        g = ref.generate(p)
        references = p.reference_outputs(g.inputs, p.scalar_values(), dims=g.dims)
        reference_s = time.perf_counter() - start
        slowest, failures = 0.0, []
        for name, kernel in kernels.items():
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                [case] = judge_kernel(kernel, p, [g], c, references=[references], timeout_s=120.0)["ascending"]
                best = min(best, time.perf_counter() - start)
            slowest = max(slowest, best)
            if not case.passed:
                failures.append(f"{name}: {case.outcome} {case.message[:80]}")
        declared = {d: p.dims[d].max for d in dims}
        rows.append({"problem": problem_id, "corner": corner, "dims": dims, "elements": cost(p, dims).elements,
                     "reference_s": reference_s, "slowest_s": slowest, "failures": failures,
                     "reaches": corner == "min" or dims[corner[:-4]] == declared[corner[:-4]]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="*", help="problem ids (default: every problem)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per kernel and corner; the fastest counts")
    args = ap.parse_args(argv)
    rows = [r for pid in track(args.problems or list_problems(), description="corners")
            for r in measure(pid, args.repeat)]
    t = Table(title=f"corners of the declared domains: {len(rows)} corners; flagged past {CASE_SECONDS:g} s, "
                    "a failure, or a maximum not reached")
    for col in ("problem", "corner", "dims", "elements", "reference s", "slowest kernel s", "flag"):
        t.add_column(col)
    flagged = 0
    for r in rows:
        flag = "; ".join([*(["slow"] if r["slowest_s"] > CASE_SECONDS else []),
                          *(["max not reached"] if not r["reaches"] else []), *r["failures"]])
        flagged += bool(flag)
        t.add_row(r["problem"], r["corner"], ",".join(f"{k}={v}" for k, v in r["dims"].items()), f"{r['elements']:,}",
                  f"{r['reference_s']:.2f}", f"{r['slowest_s']:.2f}", flag or "-")
    console = Console(width=200)
    console.print(t)
    console.print(f"{flagged} of {len(rows)} corners flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
