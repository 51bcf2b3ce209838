"""The correct set (issue 31 item 1): hand-written correct kernels in styles the catalog lacks, and
their error measured against the catalog's own correct kernels; results in benchmarks/README.md,
"Correct set for the tolerance envelope (issue 31 item 1)".

A per-input tolerance envelope rejects a kernel whose error on an input exceeds a multiple of the
error the catalog's correct kernels (substrate and variants) make on that very input. Its multiple
must be calibrated on correct kernels whose numerics differ from the catalog's: other reduction
trees, atomics that land in any order, Kahan, Neumaier and pairwise sums, fp64 accumulation,
split-K, warp-, block- and thread-per-row layouts, vector loads, online algorithms, in-place
updates, multi-launch plans. `benchmarks/correct/` holds them, `correct.toml` names each one's
problem, style and numerics. Three measurements:

- `ratios` (default): every kernel and every catalog kernel of its problem on the problem's pool
  of record in the gate's three thread orders; per input and output, the kernel's max abs and max
  rel error divided by the worst catalog kernel's (the envelope). Prints per-problem counts, each
  kernel's worst and median ratio, and the distribution over all (kernel, input, output) cells.
- `domain`: the validity-style check beyond the pool: every generator at every preset with other
  seeds, every value family at the official shape, and the costly shape classes (large, long_loop,
  many_rows); a draw the catalog's kernels all pass in three orders must be passed by every kernel
  of the set in three orders.
- `gate`: the reward gate's verdict (`envs.judge.Judge`, in this process) under several secrets.

    python benchmarks/bench_correct_set.py                       # ratios on the pool of record
    python benchmarks/bench_correct_set.py --mode domain --only sum_dim
    python benchmarks/bench_correct_set.py --mode gate --secrets 3
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CORRECT_DIR = Path(__file__).resolve().parent / "correct"
MANIFEST = CORRECT_DIR / "correct.toml"
#: The thread orders every measurement runs in: the reward gate's.
SCHEDULES = ("ascending", "descending", "shuffled:1")
#: The fresh-draw secrets of `gate` mode start here, so a rerun draws the same cases.
FIRST_SECRET = 20261203
#: Shape classes a pool of record leaves out (too costly for every reward) that `domain` draws.
COSTLY_DRAWS = ("large", "long_loop", "many_rows")
#: Seeds of the `domain` draws: the pool of record draws seed 0.
DOMAIN_SEEDS = (1, 2)
_KEYS = {"file", "problem", "style", "numerics"}
_OPTIONAL = {"inspired_by", "gate_note"}


@dataclass(frozen=True)
class CorrectKernel:
    """One entry of `correct.toml` and its kernel's text. `gate_note`: why the current gate rejects
    this correct kernel (a false reject), empty when the gate accepts it."""

    file: str
    problem: str
    style: str
    numerics: str
    source: str
    inspired_by: str = ""
    gate_note: str = ""

    @property
    def stem(self) -> str:
        return self.file.removesuffix(".cu")


def load_manifest(path: Path = MANIFEST) -> list[CorrectKernel]:
    """The kernels of the correct set whose manifest is `path`, in manifest order. An entry with an
    unknown or missing key, an unknown problem, a file not named `<problem>_<style>.cu` or absent,
    raises ValueError naming the entry's index and file."""
    from mutagym.substrates.catalog import list_problems
    problems = set(list_problems())
    kernels = []
    for k, entry in enumerate(tomllib.loads(path.read_text()).get("kernel", [])):
        where = f"{path} kernel #{k} ({entry.get('file', '?')})"
        unknown, missing = set(entry) - _KEYS - _OPTIONAL, _KEYS - set(entry)
        if unknown or missing:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
        if entry["problem"] not in problems:
            raise ValueError(f"{where}: no catalog problem {entry['problem']!r}")
        if entry["file"] != f"{entry['problem']}_{entry['style']}.cu" or not re.fullmatch(r"[a-z0-9_]+", entry["style"]):
            raise ValueError(f"{where}: the file must be named <problem>_<style>.cu with a style of [a-z0-9_], "
                             f"here {entry['problem']}_{entry['style']}.cu")
        file = path.parent / entry["file"]
        if not file.is_file():
            raise ValueError(f"{where}: no such kernel file {str(file)!r}")
        kernels.append(CorrectKernel(**entry, source=file.read_text()))
    return kernels


# ------------------------------------------------------------------------- running kernels
def _errors(kernel, problem, inputs, references) -> dict[str, dict[str, tuple[float, float]] | str]:
    """input id -> (output -> (max abs, max rel) worst over `SCHEDULES`), or the first failing
    order's message when the kernel fails the input in some order."""
    from mutagym.rewards.judging import comparator_for, judge_kernel
    judged = judge_kernel(kernel, problem, inputs, comparator_for(problem), SCHEDULES, references=references)
    out: dict[str, dict | str] = {}
    for schedule, cases in judged.items():
        for case in cases:
            if isinstance(out.get(case.input_id), str):
                continue
            if not case.passed:
                out[case.input_id] = f"{schedule}: {case.message}"
                continue
            worst = out.setdefault(case.input_id, {})
            for o in case.outputs:
                a, r = worst.get(o.name, (0.0, 0.0))
                worst[o.name] = (max(a, o.max_abs), max(r, o.max_rel))
    return out


def _catalog_envelope(problem, inputs, references) -> dict[str, dict[str, tuple[float, float]]]:
    """input id -> output -> the worst (max abs, max rel) of every catalog kernel of `problem`."""
    from mutagym.runtime import compile
    envelope: dict[str, dict[str, tuple[float, float]]] = {}
    for name, source in problem.kernel_sources().items():
        for input_id, errors in _errors(compile(source, backend="cpu"), problem, inputs, references).items():
            if isinstance(errors, str):
                raise RuntimeError(f"catalog kernel {problem.id}/{name} fails {input_id}: {errors}")
            worst = envelope.setdefault(input_id, {})
            for o, (a, r) in errors.items():
                wa, wr = worst.get(o, (0.0, 0.0))
                worst[o] = (max(wa, a), max(wr, r))
    return envelope


def _pool_inputs(problem):
    """The pool of record's inputs of `problem` (as the gate's pool stage judges them) and their
    fp64 references."""
    from mutagym.envs.pool import PoolRegistry
    from mutagym.rewards.judging import shared_cache
    made = [shared_cache().get(problem, ref) for ref in PoolRegistry().get(problem.id).inputs]
    return [g for g, _ in made], [r for _, r in made]


def ratio(mine: float, envelope: float) -> float:
    """`mine / envelope`, 0 when both are 0 (the kernel is as exact as the catalog), inf when only
    the envelope is 0.

    >>> ratio(2e-7, 1e-7), ratio(0.0, 0.0), ratio(1e-9, 0.0)
    (2.0, 0.0, inf)
    """
    if envelope > 0:
        return mine / envelope
    return 0.0 if mine == 0 else math.inf


def measure_ratios(kernels: list[CorrectKernel], on_done=lambda k, record: None) -> list[dict]:
    """For each kernel, one record per (pool input, output): the kernel's and the envelope's max abs
    and max rel errors and their ratios, or the failure (`fails`) where the kernel fails an input."""
    from mutagym.runtime import compile
    from mutagym.substrates.catalog import load_problem
    records = []
    by_problem: dict[str, list[CorrectKernel]] = {}
    for k in kernels:
        by_problem.setdefault(k.problem, []).append(k)
    for pid, group in by_problem.items():
        problem = load_problem(pid)
        inputs, references = _pool_inputs(problem)
        envelope = _catalog_envelope(problem, inputs, references)
        for k in group:
            record = {"file": k.file, "problem": pid, "style": k.style, "cells": [], "fails": []}
            for input_id, errors in _errors(compile(k.source, backend="cpu"), problem, inputs, references).items():
                if isinstance(errors, str):
                    record["fails"].append(f"{input_id}: {errors}")
                    continue
                for o, (a, r) in errors.items():
                    ea, er = envelope[input_id][o]
                    record["cells"].append({"input": input_id, "output": o, "abs": a, "rel": r, "env_abs": ea,
                                            "env_rel": er, "ratio_abs": ratio(a, ea), "ratio_rel": ratio(r, er)})
            records.append(record)
            on_done(k, record)
    return records


def domain_inputs(problem) -> list:
    """The `domain` draws of `problem`: every generator at every preset and every value family at the
    official shape, with `DOMAIN_SEEDS`, and each costly shape class the problem offers with an
    ordinary generator and each value family (one seed)."""
    from mutagym.rewards.generators import GENERATORS, ORDINARY_GENERATORS, families_for, generate, why_not
    from mutagym.rewards.shapes import shape_classes
    families = families_for(problem)
    draws = [(g, pr, s) for g in GENERATORS for pr in problem.preset_names for s in DOMAIN_SEEDS
             if not why_not(problem, g)]
    draws += [(f, "official", s) for f in families for s in DOMAIN_SEEDS]
    offered = set(shape_classes(problem))
    draws += [(g, f"@{cls}", DOMAIN_SEEDS[0]) for cls in COSTLY_DRAWS if cls in offered
              for g in (*ORDINARY_GENERATORS, *families)]
    return [generate(problem, g, preset=pr, seed=s) for g, pr, s in draws]


def check_domain(kernels: list[CorrectKernel], on_done=lambda k, record: None) -> list[dict]:
    """For each kernel: the `domain` draws of its problem that the catalog's kernels all pass in
    `SCHEDULES` (the validity gate), and those of them the kernel fails in some order."""
    from mutagym.rewards.judging import shared_cache
    from mutagym.rewards.validity import check_validity
    from mutagym.runtime import compile
    from mutagym.substrates.catalog import load_problem
    records, valid_by_problem = [], {}
    for k in kernels:
        problem = load_problem(k.problem)
        if k.problem not in valid_by_problem:
            candidates = domain_inputs(problem)
            verdicts = check_validity(problem, candidates, schedules=SCHEDULES)
            valid_by_problem[k.problem] = ([g for g, v in zip(candidates, verdicts) if v.valid], len(candidates))
        valid, drawn = valid_by_problem[k.problem]
        references = [shared_cache().reference(problem, g) for g in valid]
        errors = _errors(compile(k.source, backend="cpu"), problem, valid, references)
        record = {"file": k.file, "problem": k.problem, "drawn": drawn, "valid": len(valid),
                  "fails": [f"{i}: {e}" for i, e in errors.items() if isinstance(e, str)]}
        records.append(record)
        on_done(k, record)
    return records


def judge_gate(kernels: list[CorrectKernel], secrets: range, on_done=lambda k, record: None) -> list[dict]:
    """Each kernel's reward-gate verdict under each of `secrets` (the fresh stage draws anew)."""
    from mutagym.envs.judge import Judge
    records = {k.file: {"file": k.file, "problem": k.problem, "verdicts": []} for k in kernels}
    for secret in secrets:
        judge = Judge(None, prescreen=False, secret=secret)
        try:
            for k in kernels:
                j = judge.judge(k.source, k.problem)
                gate = j.gate or {}
                records[k.file]["verdicts"].append({"secret": secret, "accepted": j.accepted, "outcome": j.outcome,
                                                    "stage": gate.get("stage"), "schedule": gate.get("schedule"),
                                                    "failing": gate.get("failing"), "message": j.message[:300]})
                on_done(k, records[k.file])
        finally:
            judge.close()
    return list(records.values())


# ------------------------------------------------------------------------- tables
def _worst(cells: list[dict], key: str) -> float:
    return max((c[key] for c in cells), default=0.0)


def _quantiles(values: list[float]) -> str:
    finite = np.array([v for v in values if math.isfinite(v)])
    if finite.size == 0:
        return "-"
    q = np.quantile(finite, (0.5, 0.9, 0.99, 1.0))
    return " / ".join(f"{v:.3g}" for v in q)


#: Upper edges of the ratio histogram's buckets.
BUCKETS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, math.inf)


def histogram(values: list[float]) -> list[tuple[str, int]]:
    """(bucket, count) of `values`: exactly 0, then (lo, hi] per `BUCKETS`, then `inf` (the
    envelope is exact and the kernel is not).

    >>> histogram([0.0, 0.7, 3.0, 3.5, math.inf])[:4]
    [('0', 1), ('(0, 0.5]', 0), ('(0.5, 1]', 1), ('(1, 2]', 0)]
    """
    out = [("0", sum(v == 0 for v in values))]
    for lo, hi in zip(BUCKETS, BUCKETS[1:]):
        label = f"({lo:g}, {hi:g}]" if math.isfinite(hi) else f"> {lo:g}"
        out.append((label, sum(lo < v <= hi for v in values if math.isfinite(v))))
    out.append(("inf (exact envelope)", sum(math.isinf(v) for v in values)))
    return out


def _print_ratios(console, records: list[dict]) -> None:
    from rich.table import Table
    counts = Table(title="kernels per problem")
    for col in ("problem", "kernels", "pool inputs x outputs", "worst ratio abs", "worst ratio rel"):
        counts.add_column(col)
    problems = sorted({r["problem"] for r in records})
    for pid in problems:
        group = [r for r in records if r["problem"] == pid]
        cells = [c for r in group for c in r["cells"]]
        counts.add_row(pid, str(len(group)), str(len(cells) // len(group)), f"{_worst(cells, 'ratio_abs'):.3g}",
                       f"{_worst(cells, 'ratio_rel'):.3g}")
    counts.add_row("total", str(len(records)), f"{sum(len(r['cells']) for r in records)} cells", "", "")
    console.print(counts)
    per = Table(title="each kernel against the worst catalog kernel, per pool input and output "
                      "(ratio: median / p90 / p99 / max over finite cells; inf: cells where the envelope is 0)")
    for col in ("kernel", "ratio abs", "ratio rel", "inf abs", "worst cell (input, output: abs / envelope)", "fails"):
        per.add_column(col, overflow="fold")
    for r in records:
        cells = r["cells"]
        worst = max(cells, key=lambda c: (c["ratio_abs"] if math.isfinite(c["ratio_abs"]) else -1), default=None)
        where = (f"{worst['input']}, {worst['output']}: {worst['abs']:.3g} / {worst['env_abs']:.3g}"
                 if worst else "-")
        per.add_row(r["file"].removesuffix(".cu"), _quantiles([c["ratio_abs"] for c in cells]),
                    _quantiles([c["ratio_rel"] for c in cells]), str(sum(math.isinf(c["ratio_abs"]) for c in cells)),
                    where, str(len(r["fails"])))
    console.print(per)
    for key in ("ratio_abs", "ratio_rel"):
        values = [c[key] for r in records for c in r["cells"]]
        per_kernel = [_worst([c for c in r["cells"] if math.isfinite(c[key])], key) for r in records]
        hist = Table(title=f"distribution of {key} (cells: every kernel x pool input x output; "
                           f"kernels: each kernel's worst finite cell)")
        for col in ("bucket", "cells", "kernels"):
            hist.add_column(col)
        for (label, n), (_, m) in zip(histogram(values), histogram(per_kernel)):
            hist.add_row(label, str(n), str(m))
        console.print(hist)
    fails = [(r["file"], f) for r in records for f in r["fails"]]
    if fails:
        console.print(f"[bold red]{len(fails)} pool inputs failed[/bold red]")
        for file, f in fails[:40]:
            console.print(f"  {file}: {f}")


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("ratios", "domain", "gate"), default="ratios")
    parser.add_argument("--only", help="comma-separated problems or kernel stems (default: the whole set)")
    parser.add_argument("--secrets", type=int, default=3, help="gate mode: how many fresh-draw secrets")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    kernels = load_manifest()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {k.problem for k in kernels} - {k.stem for k in kernels}
        if unknown:
            parser.error(f"--only {args.only!r}: no kernel or problem named {', '.join(sorted(unknown))}")
        kernels = [k for k in kernels if k.problem in wanted or k.stem in wanted]
    console = Console()
    settings = Table(title="bench_correct_set settings")
    for col in ("mode", "kernels", "problems", "orders", "secrets"):
        settings.add_column(col)
    settings.add_row(args.mode, str(len(kernels)), str(len({k.problem for k in kernels})), ", ".join(SCHEDULES),
                     f"{args.secrets} from {FIRST_SECRET}" if args.mode == "gate" else "-")
    console.print(settings)
    started = time.perf_counter()
    total = len(kernels) * (args.secrets if args.mode == "gate" else 1)
    with Progress(console=console) as progress:
        task = progress.add_task(args.mode, total=total)
        step = lambda k, record: progress.update(task, advance=1, description=k.stem)  # noqa: E731
        if args.mode == "ratios":
            records = measure_ratios(kernels, step)
        elif args.mode == "domain":
            records = check_domain(kernels, step)
        else:
            records = judge_gate(kernels, range(FIRST_SECRET, FIRST_SECRET + args.secrets), step)
    elapsed = time.perf_counter() - started
    if args.mode == "ratios":
        _print_ratios(console, records)
    elif args.mode == "domain":
        table = Table(title=f"domain draws the catalog passes, failed by a kernel of the set ({elapsed:.0f} s)")
        for col in ("kernel", "draws", "valid", "failed", "first failure"):
            table.add_column(col, overflow="fold")
        for r in records:
            table.add_row(r["file"].removesuffix(".cu"), str(r["drawn"]), str(r["valid"]), str(len(r["fails"])),
                          r["fails"][0][:300] if r["fails"] else "-")
        console.print(table)
    else:
        table = Table(title=f"reward gate verdicts ({elapsed:.0f} s)")
        for col in ("kernel", "accepted", "rejections (stage/order: failing input)"):
            table.add_column(col, overflow="fold")
        for r in records:
            rejected = [v for v in r["verdicts"] if not v["accepted"]]
            table.add_row(r["file"].removesuffix(".cu"), f"{len(r['verdicts']) - len(rejected)}/{len(r['verdicts'])}",
                          "; ".join(f"{v['outcome']} {v['stage']}/{v['schedule']}: {v['failing']} {v['message'][:150]}"
                                    for v in rejected) or "-")
        console.print(table)
    console.print(f"{args.mode}: {len(kernels)} kernels in {elapsed:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1, default=str))


if __name__ == "__main__":
    main()
