"""The catalog over its whole range: every problem x every shape class x a few value families, run
by the substrate and every variant on the CPU emulator and compared with the fp64 reference under
the problem's tolerance, as the validity gate does (results: README.md).

    python benchmarks/bench_catalog_range.py                    # the whole catalog, about an hour
    python benchmarks/bench_catalog_range.py --problems softmax layernorm --seeds 0 1

Per problem, each shape class of `rewards.shapes.shape_classes` is drawn (seed `--seeds`) and run
with `normal` and `--per-class` of the problem's value families (`rewards.generators.families_for`),
the families taken in turn so that each meets several classes; every family also runs on the
`official` and `tiny` presets. Each kernel runs each case on its own (one timed `run_batch`), so
the table's "slowest" is the slowest correct kernel on one case (the fastest of three runs where
the first took over half the target), against `shapes.CASE_SECONDS`, the target the budgets were
measured for. A failure is a correct kernel that does not pass a
case: the catalog is not sound there (a wrong variant, a reference that does not run, a family
or a shape class that rejects correct kernels). The table prints, per problem, the classes and
families run, the cases, the failures, the slowest case and its seconds and the budget; the
failures follow, one per line. `--out FILE` also writes every case as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from rich.console import Console
from rich.table import Table

from mutagym.rewards.generators import families_for, generate
from mutagym.rewards.shapes import CASE_SECONDS, budget, cost, shape_classes
from mutagym.rewards.judging import comparator_for
from mutagym.runtime import RunCase, compile
from mutagym.substrates import list_problems, load_problem

#: A case slower than half the target runs this many more times and its fastest run counts: the
#: machine is shared, and the minimum is the case's own cost rather than its neighbours' load.
RETIMES = 2


def cases_for(problem, seeds, per_class: int) -> list[tuple[str, str, int]]:
    """(generator, preset, seed) triples: each class with `normal` and `per_class` families in turn,
    and every family on `official` and `tiny`."""
    families = families_for(problem)
    out, turn = [], 0
    for seed in seeds:
        for cls in shape_classes(problem):
            out.append(("normal", f"@{cls}", seed))
            for _ in range(min(per_class, len(families))):
                out.append((families[turn % len(families)], f"@{cls}", seed))
                turn += 1
    out += [(f, preset, 0) for f in families for preset in ("official", "tiny")]
    return out


def sweep(problem, seeds, per_class: int, timeout_s: float, log) -> dict:
    """Run every case of `problem` through every correct kernel; the summary row and failures."""
    comparator = comparator_for(problem)
    scalars = problem.scalar_values()
    kernels = {name: compile(src, backend="cpu") for name, src in problem.kernel_sources().items()}
    failures, slowest, slowest_at = [], 0.0, ""
    triples = cases_for(problem, seeds, per_class)
    for generator, preset, seed in triples:
        t0 = time.perf_counter()
        g = generate(problem, generator, preset=preset, seed=seed)
        refs = problem.reference_outputs(g.inputs, scalars)
        prepare_s = time.perf_counter() - t0
        case = RunCase(g.inputs, problem.output_specs(g.dims), g.dims, scalars)
        times = {}
        for name, kernel in kernels.items():
            t0 = time.perf_counter()
            [result] = kernel.run_batch([case], timeout_s=timeout_s)
            times[name] = time.perf_counter() - t0
            for _ in range(RETIMES if times[name] > CASE_SECONDS / 2 else 0):
                t0 = time.perf_counter()
                kernel.run_batch([case], timeout_s=timeout_s)
                times[name] = min(times[name], time.perf_counter() - t0)
            messages = ([f"{result.outcome}: {result.message}"] if not result.ok else
                        [f"{out}: {c.message}" for out, ref in refs.items()
                         if not (c := comparator.compare(result.outputs[out], ref)).passed])
            for message in messages:
                failures.append((g.id, name, g.dims, message))
        worst = max(times, key=times.get)
        if times[worst] > slowest:
            slowest, slowest_at = times[worst], f"{worst} {preset} {g.dims}"
        if log is not None:
            log.write(json.dumps({"id": g.id, "dims": g.dims, "cost": cost(problem, g.dims).__dict__,
                                  "prepare_s": round(prepare_s, 3),
                                  "seconds": {k: round(v, 3) for k, v in times.items()}}) + "\n")
            log.flush()
    classes = shape_classes(problem)
    return {"problem": problem.id, "classes": len(classes), "families": len(families_for(problem)),
            "cases": len(triples), "failures": failures, "slowest": slowest, "slowest_at": slowest_at,
            "budget": budget(problem)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="*", help="problem ids (default: the whole catalog)")
    parser.add_argument("--seeds", nargs="*", type=int, default=[0], help="seeds of each class's draw")
    parser.add_argument("--per-class", type=int, default=2, help="value families per class, besides normal")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one kernel may take on one case")
    parser.add_argument("--out", help="write every case (id, dims, cost, seconds per kernel) as JSON lines")
    args = parser.parse_args()
    console = Console(width=200)
    problems = args.problems or list_problems()
    console.print(f"{len(problems)} problems, seeds {args.seeds}, normal + {args.per_class} families per "
                  f"class, target {CASE_SECONDS:g} s per case, load average {os.getloadavg()[0]:.1f}")
    table = Table("problem", "classes", "families", "cases", "failures", "slowest s", "slowest case",
                  "budget (elements, work, rows)")
    rows, start = [], time.monotonic()
    log = open(args.out, "w") if args.out else None
    for pid in problems:
        row = sweep(load_problem(pid), args.seeds, args.per_class, args.timeout, log)
        rows.append(row)
        b = row["budget"]
        table.add_row(pid, str(row["classes"]), str(row["families"]), str(row["cases"]),
                      str(len(row["failures"])), f"{row['slowest']:.2f}", row["slowest_at"],
                      f"2^{b.elements.bit_length() - 1}, 2^{b.work.bit_length() - 1}, {b.rows}")
        console.print(f"{pid}: {row['cases']} cases, {len(row['failures'])} failures, slowest "
                      f"{row['slowest']:.2f} s ({row['slowest_at']})", highlight=False)
    console.print(table)
    failures = [f for row in rows for f in row["failures"]]
    over = [r["problem"] for r in rows if r["slowest"] > CASE_SECONDS]
    console.print(f"{sum(r['cases'] for r in rows)} cases, {len(failures)} failures, "
                  f"{len(over)} problems over {CASE_SECONDS:g} s ({', '.join(over) or 'none'}), "
                  f"{time.monotonic() - start:.0f} s, load average {os.getloadavg()[0]:.1f}")
    for input_id, kernel, dims, message in failures:
        console.print(f"FAIL {input_id} {kernel} {dims}: {message[:300]}", highlight=False)


if __name__ == "__main__":
    main()
