"""Calibrate the time envelope: how many times the slowest catalog kernel's time a correct kernel
may need on the same input (issue 31 item 5).

Results and the command: benchmarks/README.md, "The time envelope". For every problem, the
`--inputs` costliest inputs of its pool of record and of the fresh stage's shape classes (by
elements over its tensors) and its corners
(`envs.pool.corner_inputs`, where `--corners`) run through every correct kernel we own in the
gate's first order, each case's time being the runner's CPU seconds (`RunResult.seconds`, what the
gate's limit counts):

* the catalog's kernels (substrate and variants), each against the slowest of the *others* (leave
  one out: the envelope never saw it);
* the correct kernels written outside the catalog (the probe's, `benchmarks/correct/`), against the
  slowest catalog kernel, as the gate measures a submission.

The table gives, for candidate (multiple, floor) pairs, the correct kernels' cases that would time
out, and lists the slowest ratios. Measurements are kept per problem in `--out` (a run resumes;
`--table` prints again without running).

    python benchmarks/bench_time_envelope.py                      # every problem
    python benchmarks/bench_time_envelope.py --problems softmax layernorm --inputs 2
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_envelope import external_kernels  # noqa: E402  (the same kernels the error envelope is calibrated on)

MULTIPLES = (2, 4, 8, 16, 32)
FLOORS_S = (1.0, 2.0, 5.0)
#: A generous limit while measuring: a correct kernel is timed, not judged.
MEASURE_TIMEOUT_S = 300.0


def measure_problem(problem_id: str, externals: list[dict], inputs: int, with_corners: bool) -> dict:
    """Every correct kernel's seconds on the problem's costliest pool inputs (and corners)."""
    from mutagym.envs.pool import PoolRegistry, corner_inputs
    from mutagym.rewards.checker import InputRef
    from mutagym.rewards.input_cache import InputCache
    from mutagym.rewards.shapes import shape_classes
    from mutagym.runtime import RunCase, SubmissionError, compile
    from mutagym.substrates.catalog import load_problem

    p = load_problem(problem_id)
    refs = list(PoolRegistry(backend="cpu").get(problem_id).inputs)
    refs += [InputRef(generator="normal", preset=f"@{c}", seed=0) for c in shape_classes(p)]   # the fresh stage's
    cache = InputCache(budget_bytes=1 << 30)
    sizes = {}
    for r in list(refs):      # elements over the input's tensors, generated once here
        try:
            g, _ = cache.get(p, r)
        except Exception:     # noqa: BLE001 - a recipe that does not apply to this problem
            refs.remove(r)
            continue
        sizes[r.id_for(p)] = sum(a.size for a in g.inputs.values())
    chosen = sorted(refs, key=lambda r: (-sizes[r.id_for(p)], r.id_for(p)))[:inputs]
    if with_corners:
        chosen += list(corner_inputs(problem_id))
    kernels = {f"catalog:{name}": ("catalog", src) for name, src in p.kernel_sources().items()}
    for e in externals:
        if e["problem"] == problem_id and e["expected"] == "correct":
            kernels[f"{e['set']}:{Path(e['file']).name}"] = ("correct", Path(e["file"]).read_text())
    result = {"problem": problem_id, "inputs": [r.id_for(p) for r in chosen], "kernels": {}}
    for name, (kind, source) in kernels.items():
        entry = result["kernels"][name] = {"kind": kind, "seconds": [], "outcomes": []}
        try:
            kernel = compile(source, backend="cpu")
        except SubmissionError as err:
            entry["error"] = str(err).splitlines()[0]
            continue
        for ref in chosen:
            try:
                g, _ = cache.get(p, ref)
                [run] = kernel.run_batch([RunCase(g.inputs, p.output_specs(g.dims), g.dims, p.scalar_values())],
                                         timeout_s=MEASURE_TIMEOUT_S)
                entry["seconds"].append(run.seconds)
                entry["outcomes"].append(run.outcome)
            except (SubmissionError, MemoryError) as err:
                entry["seconds"].append(None)
                entry["outcomes"].append(f"refused: {str(err).splitlines()[0][:80]}")
    return result


def ratios(result: dict) -> list[tuple[str, str, str, float, float]]:
    """(problem, kernel, input, its seconds, the envelope's seconds) of every correct run."""
    rows = []
    catalog = {n: k for n, k in result["kernels"].items() if k["kind"] == "catalog" and "error" not in k}
    for name, k in result["kernels"].items():
        if "error" in k:
            continue
        for i, (s, outcome) in enumerate(zip(k["seconds"], k["outcomes"])):
            if s is None or outcome != "ok":
                continue
            others = [c["seconds"][i] for n, c in catalog.items() if n != name
                      and c["outcomes"][i] == "ok" and c["seconds"][i] is not None]
            if others:
                rows.append((result["problem"], name, result["inputs"][i], s, max(others)))
    return rows


def table(results: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    rows = [r for res in results for r in ratios(res)]
    console = Console()
    t = Table(title=f"correct kernels' runs that would time out, of {len(rows)} runs on {len(results)} problems "
                    "(limit = max(floor, multiple x the slowest other catalog kernel))")
    t.add_column("floor")
    for m in MULTIPLES:
        t.add_column(f"x{m}", justify="right")
    for floor in FLOORS_S:
        t.add_row(f"{floor:g} s", *(str(sum(s > max(floor, m * env) for *_, s, env in rows)) for m in MULTIPLES))
    console.print(t)
    worst = sorted(rows, key=lambda r: -(r[3] / max(r[4], 0.01)))[:12]
    w = Table(title="the slowest correct runs relative to the envelope (its time floored at 10 ms, a clock tick)")
    for col in ("problem", "kernel", "input", "seconds", "envelope s", "ratio"):
        w.add_column(col, justify="right" if col in ("seconds", "envelope s", "ratio") else "left")
    for problem, kernel, input_id, s, env in worst:
        w.add_row(problem, kernel, input_id.split(":", 1)[1], f"{s:.2f}", f"{env:.2f}", f"{s / max(env, 0.01):.1f}")
    console.print(w)
    longest = max(rows, key=lambda r: r[3], default=None)
    if longest:
        console.print(f"longest correct run: {longest[1]} on {longest[2]}, {longest[3]:.1f} s "
                      f"(envelope {longest[4]:.1f} s)")
    refused = [(res["problem"], n, o) for res in results for n, k in res["kernels"].items()
               for o in k.get("outcomes", []) if o != "ok"]
    if refused:
        console.print(f"{len(refused)} runs of correct kernels did not finish ok: {refused[:6]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="*")
    parser.add_argument("--inputs", type=int, default=3, help="costliest pool inputs per problem")
    parser.add_argument("--corners", action="store_true", help="also every corner of the declared domain")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="out/bench_time_envelope")
    parser.add_argument("--table", action="store_true", help="print the tables from kept measurements only")
    args = parser.parse_args()
    from rich.progress import Progress

    from mutagym.substrates.catalog import list_problems

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problems = args.problems or list_problems()
    todo = [] if args.table else [p for p in problems if not (out / f"{p}.json").is_file()]
    externals = external_kernels()
    with Progress() as progress, ProcessPoolExecutor(args.workers) as pool:
        task = progress.add_task("time envelope", total=len(todo))
        futures = {pool.submit(measure_problem, p, externals, args.inputs, args.corners): p for p in todo}
        for future in as_completed(futures):
            (out / f"{futures[future]}.json").write_text(json.dumps(future.result()))
            progress.advance(task)
    table([json.loads((out / f"{p}.json").read_text()) for p in problems if (out / f"{p}.json").is_file()])


if __name__ == "__main__":
    main()
