"""Red team of our own (issue 31 item 6): wrong kernels in fault classes no earlier issue names,
each with a validated witness inside its problem's declared domain, split in two halves by a hash
of the file name before the gate ever judged them; results in benchmarks/README.md, "Red team of
our own (issue 31 item 6)".

The set is the yardstick of the gate's next mechanisms (per-input tolerance envelopes, a
falsification search, the whole declared domain): whoever builds them may read `redteam/seen/`
and must not read `redteam/unseen/`, whose acceptance is then a measure on faults nobody designed
against. `half_of(file)` is the split: the parity of sha256(file name).

A witness is a recipe, not a blob: a generator of `rewards/generators.py` drawn at explicit dims
(each within its spec's range) and seed, then a few value rules (`RULES`) applied in order. It is
valid when the substrate and every variant pass it in the gate's three thread orders at the
problem's tolerance (`rewards.validity.check_validity`), and it witnesses the kernel when the
kernel fails it in every one of those orders. Each kernel must also pass an ordinary input
(`ORDINARY`): these are faults that pass ordinary checks.

    python benchmarks/bench_redteam.py                  # the gate on both halves, 3 evaluations each
    python benchmarks/bench_redteam.py --evaluations 5 --half seen
    python benchmarks/bench_redteam.py --validate       # every witness checked (slow: large inputs)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REDTEAM_DIR = Path(__file__).resolve().parent / "redteam"
HALVES = ("seen", "unseen")
MANIFEST = "redteam.toml"
#: The thread orders a witness is checked in: the reward gate's.
SCHEDULES = ("ascending", "descending", "shuffled:1")
#: The ordinary input every kernel must pass (the faults are those ordinary checks miss).
ORDINARY = ("normal", "official", 0)
#: The secrets of the gate's fresh draws: evaluation i uses SECRET + i, so a rerun draws the same.
SECRET = 20261231
_KEYS = {"file", "problem", "class", "fault", "witness"}
_WITNESS_KEYS = {"generator", "dims", "seed", "rules"}


def half_of(file: str) -> str:
    """The half a kernel file belongs to: `seen` when sha256(file name) is even, else `unseen`.

    >>> [half_of(n) for n in ("a.cu", "e.cu")]
    ['unseen', 'seen']
    """
    return HALVES[int(hashlib.sha256(Path(file).name.encode()).hexdigest(), 16) % 2]


@dataclass(frozen=True)
class RedteamKernel:
    """One wrong kernel of the set: its fault class and description, its witness recipe, its text."""

    file: str
    problem: str
    fault_class: str
    fault: str
    witness: dict
    source: str
    half: str

    @property
    def name(self) -> str:
        return Path(self.file).stem


def load_half(half: str, folder: Path = REDTEAM_DIR) -> list[RedteamKernel]:
    """The kernels of one half (`folder/half/redteam.toml`); a malformed entry raises ValueError
    naming its index, file and key."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    path = folder / half / MANIFEST
    entries = tomllib.loads(path.read_text()).get("kernel", [])
    kernels = []
    for i, entry in enumerate(entries):
        where = f"{path.name} kernel #{i} ({entry.get('file', '?')})"
        if set(entry) != _KEYS:
            raise ValueError(f"{where}: unknown keys {sorted(set(entry) - _KEYS)}, "
                             f"missing keys {sorted(_KEYS - set(entry))}")
        witness = entry["witness"]
        if not {"generator", "dims"} <= set(witness) <= _WITNESS_KEYS:
            raise ValueError(f"{where}: witness keys {sorted(witness)}; expected generator, dims, "
                             f"optionally seed and rules")
        if half_of(entry["file"]) != half:
            raise ValueError(f"{where}: the file's hash puts it in the {half_of(entry['file'])!r} half")
        source = (path.parent / entry["file"]).read_text()
        kernels.append(RedteamKernel(entry["file"], entry["problem"], entry["class"], entry["fault"],
                                     witness, source, half))
    return kernels


# ------------------------------------------------------------------------------- witness recipes
_INDEX = re.compile(r"^[0-9:, \-]*$")


def _index(text: str) -> tuple:
    """A numpy index from `text` ("", ":, 0", "0, -1", "::2", "1:3, 5"): integers and slices only."""
    if not _INDEX.match(text):
        raise ValueError(f"index {text!r}: only integers, ':' and ',' are allowed")
    parts = []
    for part in (p.strip() for p in text.split(",")) if text.strip() else ():
        if ":" in part:
            parts.append(slice(*(int(b) if b.strip() else None for b in part.split(":"))))
        else:
            parts.append(int(part))
    return tuple(parts)


#: Value rules: each rule is a table naming `input`, one operation key and optionally `at` (an
#: index, default: every element). Operations run in float64 on the values so far, in order
#: (`copy` takes another input's values, as they are at that point); the result is cast back to
#: the input's dtype. Each gets (the selected values, the rule's value, the recipe's rng, every
#: input's values so far).
RULES = {
    "set": lambda arr, v, rng, inputs: np.broadcast_to(np.float64(v), arr.shape).copy(),
    "add": lambda arr, v, rng, inputs: arr + v,
    "scale": lambda arr, v, rng, inputs: arr * v,
    "noise": lambda arr, v, rng, inputs: arr + v * rng.standard_normal(arr.shape),
    "uniform": lambda arr, v, rng, inputs: rng.uniform(v[0], v[1], arr.shape),
    "copy": lambda arr, v, rng, inputs: inputs[v].astype(np.float64),
    "renormalise": lambda arr, v, rng, inputs: arr / arr.sum(axis=-1, keepdims=True),
}


def build_witness(problem, witness: dict, label: str):
    """The witness input of a recipe: `generator` at `dims` (checked against the spec's ranges)
    and `seed`, then each of `rules`; a `GeneratedInput` whose id is `label`."""
    from mutagym.rewards.generators import GeneratedInput, generate
    from mutagym.substrates.catalog import Problem
    dims = problem.check_dims(witness["dims"])
    at_dims = Problem(problem.spec.model_copy(update={"presets": {**problem.spec.presets, "witness": dims}}),
                      problem.folder)
    seed = int(witness.get("seed", 0))
    base = generate(at_dims, witness["generator"], preset="witness", seed=seed)
    inputs = {name: np.asarray(arr) for name, arr in base.inputs.items()}
    rng = np.random.default_rng(seed)
    for k, rule in enumerate(witness.get("rules", ())):
        ops = [op for op in rule if op in RULES]
        if rule.get("input") not in inputs or len(ops) != 1 or set(rule) - {"input", "at", *RULES}:
            raise ValueError(f"witness of {label}: rule #{k} {rule!r} must name one input of "
                             f"{sorted(inputs)}, one of {sorted(RULES)} and optionally 'at'")
        arr = inputs[rule["input"]]
        values = arr.astype(np.float64)
        at = _index(rule.get("at", ""))
        if ops[0] == "copy":
            if rule["copy"] not in inputs or inputs[rule["copy"]].shape != arr.shape or at:
                raise ValueError(f"witness of {label}: rule #{k} copies {rule['copy']!r}, which must be "
                                 f"another input of the same shape, whole")
        values[at] = RULES[ops[0]](values[at], rule[ops[0]], rng, inputs)
        inputs[rule["input"]] = values.astype(arr.dtype)
    return GeneratedInput(label, problem.id, witness["generator"], "witness", seed, dims, inputs)


# ------------------------------------------------------------------------------- validation
@dataclass
class Validation:
    """A witness checked: `correct_failures` lists (kernel, order, reason) where a correct kernel
    failed it (empty: valid); `kernel_outcomes` the kernel's outcome in each order; `ordinary` the
    kernel's outcome on the ordinary input."""

    name: str
    correct_failures: list[tuple[str, str, str]] = field(default_factory=list)
    kernel_outcomes: dict[str, str] = field(default_factory=dict)
    kernel_messages: dict[str, str] = field(default_factory=dict)
    ordinary: str = ""
    legitimate_error: float = 0.0

    @property
    def valid(self) -> bool:
        return not self.correct_failures

    @property
    def witnessed(self) -> bool:
        return bool(self.kernel_outcomes) and all(o != "ok" for o in self.kernel_outcomes.values())

    @property
    def holds(self) -> bool:
        return self.valid and self.witnessed and self.ordinary == "ok"


def validate(kernel: RedteamKernel, *, timeout_s: float = 120.0) -> Validation:
    """Check `kernel`'s witness: every correct kernel of its problem passes it in `SCHEDULES` at
    the problem's tolerance, the kernel fails it in each of them, and the kernel passes `ORDINARY`."""
    from mutagym.rewards.generators import generate
    from mutagym.rewards.judging import comparator_for, judge_kernel
    from mutagym.rewards.validity import check_validity
    from mutagym.runtime import compile
    from mutagym.substrates.catalog import load_problem
    problem = load_problem(kernel.problem)
    witness = build_witness(problem, kernel.witness, f"redteam:{kernel.name}")
    result = Validation(kernel.name)
    [verdict] = check_validity(problem, [witness], schedules=SCHEDULES, timeout_s=timeout_s)
    result.correct_failures = [(k, s, m) for k, s, _, m in verdict.failures]
    result.legitimate_error = verdict.tolerance_used
    built = compile(kernel.source, backend="cpu")
    comparator = comparator_for(problem)
    for schedule, [case] in judge_kernel(built, problem, [witness], comparator, SCHEDULES,
                                         timeout_s=timeout_s).items():
        result.kernel_outcomes[schedule] = case.outcome
        result.kernel_messages[schedule] = case.message
    generator, preset, seed = ORDINARY
    [ordinary] = judge_kernel(built, problem, [generate(problem, generator, preset=preset, seed=seed)],
                              comparator)["ascending"]
    result.ordinary = ordinary.outcome
    return result


def witness_elements(kernel: RedteamKernel) -> int:
    """Elements of the witness's largest input (what makes a witness slow to check)."""
    from mutagym.substrates.catalog import load_problem
    problem = load_problem(kernel.problem)
    dims = problem.check_dims(kernel.witness["dims"])
    return max(int(np.prod(problem.shape(t.name, dims), dtype=np.int64)) for t in problem.inputs)


# ------------------------------------------------------------------------------- the gate
def judge_gate(kernels: list[RedteamKernel], evaluations: int, secret: int = SECRET,
               on_done=lambda kernel, record: None) -> dict[str, list[dict]]:
    """Each kernel judged by the reward gate (`envs.judge.Judge`, default gate, in this process)
    in `evaluations` evaluations, evaluation i with the fresh-draw secret `secret + i` (a new
    judge each time: a judge keeps its verdicts by text). File -> one record per evaluation."""
    from mutagym.envs.judge import Judge
    out: dict[str, list[dict]] = {k.file: [] for k in kernels}
    for i in range(evaluations):
        judge = Judge(None, prescreen=False, secret=secret + i)
        try:
            for kernel in kernels:
                started = time.perf_counter()
                j = judge.judge(kernel.source, kernel.problem)
                gate = j.gate or {}
                record = {"secret": secret + i, "accepted": j.accepted, "outcome": j.outcome,
                          "infra_error": j.infra_error, "stage": gate.get("stage"),
                          "schedule": gate.get("schedule"), "failing": gate.get("failing"),
                          "seconds": round(time.perf_counter() - started, 2)}
                out[kernel.file].append(record)
                on_done(kernel, record)
        finally:
            judge.close()
    return out


def acceptance_by_class(kernels: list[RedteamKernel], verdicts: dict[str, list[dict]]) -> list[dict]:
    """Per fault class and half: kernels, evaluations paid / judged, kernels paid in at least one
    evaluation and in every one; a `total` row per half last."""
    rows: dict[tuple[str, str], dict] = {}
    for k in kernels:
        for key in ((k.fault_class, k.half), ("total", k.half)):
            row = rows.setdefault(key, {"class": key[0], "half": key[1], "kernels": 0, "paid": 0,
                                        "judged": 0, "paid_once": 0, "paid_always": 0, "infra_errors": 0})
            runs = verdicts[k.file]
            paid = sum(r["accepted"] for r in runs)
            row["kernels"] += 1
            row["paid"] += paid
            row["judged"] += len(runs)
            row["paid_once"] += paid > 0
            row["paid_always"] += bool(runs) and paid == len(runs)
            row["infra_errors"] += sum(bool(r["infra_error"]) for r in runs)
    return sorted(rows.values(), key=lambda r: (r["class"] == "total", r["class"], r["half"]))


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=(*HALVES, "both"), default="both")
    parser.add_argument("--evaluations", type=int, default=3, help="gate evaluations per kernel (fresh secrets)")
    parser.add_argument("--secret", type=int, default=SECRET, help="secret of the first evaluation")
    parser.add_argument("--validate", action="store_true",
                        help="check every witness instead of running the gate (valid, kernel fails, ordinary passes)")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    halves = HALVES if args.half == "both" else (args.half,)
    kernels = [k for h in halves for k in load_half(h)]
    console = Console()
    settings = Table(title="bench_redteam settings")
    for col in ("halves", "kernels", "problems", "classes", "mode", "evaluations", "first secret"):
        settings.add_column(col)
    settings.add_row(", ".join(f"{h} ({sum(k.half == h for k in kernels)})" for h in halves), str(len(kernels)),
                     str(len({k.problem for k in kernels})), str(len({k.fault_class for k in kernels})),
                     "validate" if args.validate else "gate", "-" if args.validate else str(args.evaluations),
                     "-" if args.validate else str(args.secret))
    console.print(settings)
    started = time.perf_counter()
    if args.validate:
        _validate_all(console, kernels, args.json)
        return
    with Progress(console=console) as progress:
        task = progress.add_task("judging", total=len(kernels) * args.evaluations)
        verdicts = judge_gate(kernels, args.evaluations, args.secret,
                              on_done=lambda k, r: progress.update(task, advance=1,
                                                                   description=k.name if k.half == "seen" else "unseen"))
    seen = [k for k in kernels if k.half == "seen"]
    if seen:
        table = Table(title="seen half, per kernel (unseen kernels are never listed)")
        for col in ("kernel", "class", "paid", "rejecting stages (stage/order: generator @ shape)"):
            table.add_column(col, overflow="fold")
        for k in seen:
            runs = verdicts[k.file]
            where = sorted({f"{r['stage']}/{r['schedule']}: {r['failing']['generator']} @ {r['failing']['shape']}"
                            if r["failing"] else f"{r['outcome']}" for r in runs if not r["accepted"]})
            table.add_row(k.name, k.fault_class, f"{sum(r['accepted'] for r in runs)}/{len(runs)}", "; ".join(where) or "-")
        console.print(table)
    summary = acceptance_by_class(kernels, verdicts)
    totals = Table(title=f"the gate's acceptance by fault class and half ({time.perf_counter() - started:.0f} s)")
    for col in ("class", "half", "kernels", "paid / judged", "paid in >= 1 evaluation", "paid in all", "infra errors"):
        totals.add_column(col)
    for r in summary:
        totals.add_row(r["class"], r["half"], str(r["kernels"]), f"{r['paid']}/{r['judged']}",
                       str(r["paid_once"]), str(r["paid_always"]), str(r["infra_errors"]))
    console.print(totals)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "seen": {k.file: verdicts[k.file] for k in seen}},
                                              indent=2))


def _validate_all(console, kernels: list[RedteamKernel], json_path: str | None) -> None:
    """Validate every witness; seen kernels by name, unseen ones only as totals (and by name only
    where a witness does not hold, which needs fixing)."""
    from rich.table import Table
    results = [(k, validate(k)) for k in kernels]
    table = Table(title="witnesses (seen half by name)")
    for col in ("kernel", "class", "valid", "kernel fails (orders)", "ordinary", "correct kernels' tolerance used"):
        table.add_column(col)
    for k, v in results:
        if k.half == "seen" or not v.holds:
            table.add_row(k.name, k.fault_class, str(v.valid),
                          f"{sum(o != 'ok' for o in v.kernel_outcomes.values())}/{len(SCHEDULES)}",
                          v.ordinary, f"{v.legitimate_error:.2g}")
    console.print(table)
    for half in HALVES:
        mine = [v for k, v in results if k.half == half]
        if mine:
            console.print(f"{half}: {sum(v.holds for v in mine)} of {len(mine)} witnesses hold")
    if json_path:
        Path(json_path).write_text(json.dumps({k.file: {"half": k.half, "holds": v.holds} for k, v in results}, indent=2))


if __name__ == "__main__":
    main()
