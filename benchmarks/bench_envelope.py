"""Calibrate the envelope rule: the multiple of the correct kernels' error a kernel may have on an
input, and its floor in ulps, against every correct kernel we own (issue 31 item 1).

Results and the command: benchmarks/README.md, "The envelope". For every problem, every input of
its pool of record (the shipped pool file and the coverage inputs) runs through

* the catalog's correct kernels (substrate and variants): each is judged against the envelope of
  the others (leave one out), the honest test of a correct kernel the envelope never saw;
* the correct kernels written outside the catalog (the probe's, `benchmarks/correct/`): judged
  against the catalog's envelope, as the gate judges every submission;
* the wrong kernels of the probe and of the red team's seen half (never the unseen half): how many
  the envelope catches on these inputs that the flat tolerance pays,

in the gate's three thread orders. For every (kernel, input, order, output) it keeps, for each
candidate floor F, the largest share of the flat budget `atol + rtol |ref|` used by the elements
whose error exceeds F ulps; the multiple a kernel needs there is that share over the envelope.
The table gives, for each (multiple, floor), the correct kernels rejected (must be 0) and the
wrong kernels caught beyond the flat tolerance. Measurements are kept per problem in `--out`, so
a run resumes and the table can be printed again without running (`--table`).

    python benchmarks/bench_envelope.py                       # every problem (long: see README)
    python benchmarks/bench_envelope.py --problems softmax layernorm
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: Candidate floors, in ulps of the output's dtype.
FLOORS = (0, 1, 2, 4, 8, 16, 32, 64)
#: Candidate multiples of the envelope.
MULTIPLES = (1, 2, 4, 8, 16, 32, 64, 128, 1024)
#: Candidate least shares of the flat budget an output may always use, and the floors shown with them.
LEAST_SHARES = (0.0, 1e-4, 1e-3)
SHOWN_FLOORS = (0, 4, 16, 64)
#: Inputs run per batch (a large-reduction input holds about a million elements an output).
BATCH = 16


def external_kernels() -> list[dict]:
    """The kernels written outside the catalog: the probe's (correct and wrong), the correct set
    (benchmarks/correct, if present) and the red team's seen half. Each: file, problem, expected."""
    kernels = []
    for folder, manifest in (("probe", "probe.toml"), ("correct", "correct.toml"), ("redteam/seen", "redteam.toml")):
        path = ROOT / "benchmarks" / folder / manifest
        if not path.is_file():
            continue
        for entry in tomllib.loads(path.read_text()).get("kernel", []):
            expected = entry.get("expected", "wrong" if folder.startswith("redteam") else "correct")
            kernels.append({"file": str(path.parent / entry["file"]), "problem": entry["problem"],
                            "expected": expected, "set": folder.split("/")[0]})
    return kernels


def _shares(out: np.ndarray, ref, budget: np.ndarray, floors_ulp: np.ndarray | None) -> list[float]:
    """Per floor F: the largest |out - ref| / budget over finite elements whose error exceeds F ulps."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(np.ravel(out).astype(np.float64) - ref.r)
        share = np.where(ref.finite & np.isfinite(diff), diff / budget, 0.0)
    if floors_ulp is None:
        return [float(share.max())] * len(FLOORS)
    return [float(np.where(diff > f * floors_ulp, share, 0.0).max()) for f in FLOORS]


def measure_problem(problem_id: str, externals: list[dict]) -> dict:
    """Every kernel's shares on every pool input of one problem, in the gate's orders."""
    from mutagym.envs.gate import SCHEDULES
    from mutagym.envs.pool import PoolRegistry
    from mutagym.rewards.comparator import Reference
    from mutagym.rewards.envelope import ulp
    from mutagym.rewards.input_cache import InputCache
    from mutagym.rewards.judging import comparator_for
    from mutagym.runtime import RunCase, SubmissionError, compile
    from mutagym.runtime.buffers import numpy_dtype
    from mutagym.substrates.catalog import load_problem

    p = load_problem(problem_id)
    c = comparator_for(p)
    refs = list(PoolRegistry(backend="cpu").get(problem_id).inputs)
    kernels = {f"catalog:{name}": ("catalog", src) for name, src in p.kernel_sources().items()}
    for e in externals:
        kernels[f"{e['set']}:{Path(e['file']).name}"] = (e["expected"], Path(e["file"]).read_text())
    built, result = {}, {"problem": problem_id, "inputs": [r.id_for(p) for r in refs], "kernels": {}}
    for name, (kind, source) in kernels.items():
        try:
            built[name] = compile(source, backend="cpu")
        except SubmissionError as err:
            result["kernels"][name] = {"kind": kind, "error": str(err).splitlines()[0]}
    for name in built:
        result["kernels"][name] = {"kind": kernels[name][0], "cells": []}
    cache = InputCache(budget_bytes=1 << 29)
    for start in range(0, len(refs), BATCH):
        made = [cache.get(p, r) for r in refs[start:start + BATCH]]
        cases = [RunCase(g.inputs, p.output_specs(g.dims), g.dims, p.scalar_values()) for g, _ in made]
        prepared = [{n: Reference(a) for n, a in ref.items()} for _, ref in made]
        for name, kernel in built.items():
            try:
                runs = kernel.run_schedules(cases, SCHEDULES, timeout_s=60.0)
            except SubmissionError as err:    # a launch plan refused for some input: the kernel's fault
                result["kernels"][name]["error"] = str(err).splitlines()[0]
                continue
            for order, results in runs.items():
                for k, (run, refs_k) in enumerate(zip(results, prepared)):
                    cell = {"input": start + k, "order": order, "ok": run.ok, "outputs": {}}
                    for out_name, ref in refs_k.items():
                        if not run.ok:
                            break
                        out = run.outputs[out_name]
                        flat = c.compare(out, ref)
                        budget = np.maximum(ref.threshold(c.atol, c.rtol), np.finfo(np.float64).tiny)
                        cell["outputs"][out_name] = {"flat": flat.passed,
                                                     "shares": _shares(out, ref, budget, ulp(ref.r, out.dtype))}
                    result["kernels"][name]["cells"].append(cell)
        reference32 = result["kernels"].setdefault("reference:float32", {"kind": "reference", "cells": []})
        for k, ((g, _), refs_k) in enumerate(zip(made, prepared)):
            try:
                outs = p.reference_outputs(g.inputs, p.scalar_values(), dims=g.dims, precision="float32")
            except Exception as err:   # noqa: BLE001 - a reference float32 cannot run: no such yardstick
                reference32["error"] = f"{type(err).__name__}: {err}"
                break
            cell = {"input": start + k, "order": "ascending", "ok": True, "outputs": {}}
            for out_name, ref in refs_k.items():
                out = outs[out_name].astype(numpy_dtype(p.output_specs(g.dims)[out_name][1]))
                flat = c.compare(out, ref)
                budget = np.maximum(ref.threshold(c.atol, c.rtol), np.finfo(np.float64).tiny)
                cell["outputs"][out_name] = {"flat": flat.passed,
                                             "shares": _shares(out, ref, budget, ulp(ref.r, out.dtype))}
            reference32["cells"].append(cell)
    return result


def envelopes_of(result: dict, leave_out: str | None, with_reference32: bool) -> dict[tuple[int, str], float]:
    """(input, output) -> the worst plain share (F = 0) of the catalog kernels but `leave_out`
    (and of the reference run in float32, `with_reference32`), over orders: the envelope the gate
    would hold."""
    env: dict[tuple[int, str], float] = {}
    for name, k in result["kernels"].items():
        counted = k["kind"] == "catalog" or (with_reference32 and k["kind"] == "reference")
        if not counted or name == leave_out or "error" in k:
            continue
        for cell in k["cells"]:
            for out, o in cell["outputs"].items():
                if o["flat"]:
                    key = (cell["input"], out)
                    env[key] = max(env.get(key, 0.0), o["shares"][0])
    return env


def needed_multiples(result: dict, with_reference32: bool) -> dict[str, dict]:
    """Per kernel: its kind, and per floor the largest multiple of the envelope it needs on an
    input it passes flat (inf where the envelope is 0 and its error is above the floor), and
    whether the flat tolerance fails it anywhere."""
    full = envelopes_of(result, None, with_reference32)
    out = {}
    for name, k in result["kernels"].items():
        if k["kind"] == "reference":
            continue
        if "error" in k:
            out[name] = {"kind": k["kind"], "flat_fails": True, "error": k["error"],
                         "needed": [[0.0] * len(FLOORS) for _ in LEAST_SHARES]}
            continue
        env = envelopes_of(result, name, with_reference32) if k["kind"] == "catalog" else full
        needed = [[0.0] * len(FLOORS) for _ in LEAST_SHARES]
        flat_fails = False
        for cell in k["cells"]:
            if not cell["ok"] or not all(o["flat"] for o in cell["outputs"].values()):
                flat_fails = True
                continue
            for out_name, o in cell["outputs"].items():
                e = env.get((cell["input"], out_name))
                if e is None:        # no other catalog kernel passed it: no envelope to hold
                    continue
                for g, least in enumerate(LEAST_SHARES):
                    for f, share in enumerate(o["shares"]):
                        if share > least:
                            needed[g][f] = max(needed[g][f], share / e if e > 0 else float("inf"))
        out[name] = {"kind": k["kind"], "flat_fails": flat_fails, "needed": needed}
    return out


def table(results: list[dict], with_reference32: bool) -> str:
    """The trade-off: per (floor, multiple), correct kernels rejected and wrong ones caught."""
    from rich.console import Console
    from rich.table import Table

    rows = [(r["problem"], name, n) for r in results for name, n in needed_multiples(r, with_reference32).items()]
    correct = [(p, k, n) for p, k, n in rows if n["kind"] in ("catalog", "correct")]
    wrong = [(p, k, n) for p, k, n in rows if n["kind"] == "wrong"]
    wrong_paid = [w for w in wrong if not w[2]["flat_fails"]]
    envelope = "the correct kernels and the reference in float32" if with_reference32 else "the correct kernels"
    t = Table(title=f"envelope of {envelope}, on the pools of {len(results)} problems: {len(correct)} correct kernels "
                    f"(catalog leave-one-out and outside), {len(wrong)} wrong ({len(wrong_paid)} paid by the flat tolerance)")
    t.add_column("floor (ulps)", justify="right")
    t.add_column("least share", justify="right")
    for m in MULTIPLES:
        t.add_column(f"x{m}", justify="right")
    for g, least in enumerate(LEAST_SHARES):
        for floor in SHOWN_FLOORS:
            f = FLOORS.index(floor)
            cells = []
            for m in MULTIPLES:
                rejected = sum(n["needed"][g][f] > m for _, _, n in correct if not n["flat_fails"])
                caught = sum(n["needed"][g][f] > m for _, _, n in wrong_paid)
                cells.append(f"{rejected} / {caught}")
            t.add_row(str(floor), f"{least:g}", *cells)
    console = Console(record=True, width=200, file=open(os.devnull, "w"))
    console.print(t)
    console.print("cells: correct kernels rejected / wrong kernels caught that the flat tolerance pays")
    worst = sorted(((n["needed"][0][FLOORS.index(16)], p, k) for p, k, n in correct if not n["flat_fails"]),
                   reverse=True)[:12]
    w = Table(title="the correct kernels nearest to their envelope (floor 16 ulps, no least share)")
    for col in ("problem", "kernel", "multiple needed"):
        w.add_column(col)
    for need, p, k in worst:
        w.add_row(p, k, f"{need:.3g}")
    console.print(w)
    flagged = [(p, k) for p, k, n in correct if n["flat_fails"]]
    if flagged:
        console.print(f"correct kernels the flat tolerance fails on some pool input (not envelope questions): {flagged}")
    return console.export_text()


def main(argv: list[str] | None = None) -> int:
    from mutagym.substrates.catalog import list_problems
    from rich.progress import Progress

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="*", help="problem ids (default: every problem)")
    ap.add_argument("--out", default="out/bench_envelope", help="where measurements are kept (resumable)")
    ap.add_argument("--jobs", type=int, default=2, help="problems measured at once")
    ap.add_argument("--table", action="store_true", help="print the table from kept measurements only")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problems = args.problems or list_problems()
    externals = external_kernels()
    todo = [] if args.table else [p for p in problems if not (out / f"{p}.json").is_file()]
    with Progress() as progress, ProcessPoolExecutor(args.jobs) as pool:
        task = progress.add_task("problems", total=len(todo))
        futures = {pool.submit(measure_problem, p, [e for e in externals if e["problem"] == p]): p for p in todo}
        for future in as_completed(futures):
            result = future.result()
            tmp = out / f".{futures[future]}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(result))
            os.replace(tmp, out / f"{futures[future]}.json")
            progress.advance(task)
    results = [json.loads((out / f"{p}.json").read_text()) for p in problems if (out / f"{p}.json").is_file()]
    for with_reference32 in (False, True):
        print(table(results, with_reference32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
