"""The kill matrix: mutants x valid inputs x thread schedules -> outcome, on Ray.

One Ray task per problem generates the candidate inputs (generators x presets x seeds, and shape
classes of `rewards.shapes` drawn as presets `@<class>`; see `candidate_inputs`) and runs
the validity gate (`rewards.validity`) against the fp64 reference; the driver puts the valid inputs
and their references in Ray's object store once. One Ray task per mutant (or per `inputs_per_task`
chunk) compiles the mutant once and runs its inputs in one batch (buffers laid out once, one run
per schedule); a schedule whose outputs are bitwise those of an earlier one copies that cell's
comparison. Each cell gets one outcome of the judging core's vocabulary (`rewards.judging`), the
same a submitted kernel gets:

| outcome | meaning |
| --- | --- |
| `wrong` | the run finished and the comparator rejects an output: the mutant is killed |
| `ok` | the run finished and every output passes: the mutant survived this cell |
| `memory_fault`, `sync_error`, `data_race`, `stateful_kernel`, `timeout`, `crash`, `forbidden_syscall` | how the run ended |
| `source_error`, `compile_error`, `launch_error` | the mutant does not build, or its launch plan is refused |

with the comparator's statistics (max abs, max rel error, mismatch ratio; inf where the output has
NaN/Inf and the reference is finite; null when the run produced no output).
The first schedule runs on every input, the later ones on the inputs whose largest tensor has at
most `later_schedules_max_elements` elements (2^12): a thread order shows on any shape with more
than one block, and the race detector names an unordered pair of accesses in the first order
already; a cell the plan leaves out is absent from the table, not a survival.

A *witness* of a mutant is a valid input on which it does not survive in some schedule (a
refused launch counts: a GPU would refuse it too; a build error does not, it depends on no input).
The inputs table's `shape_class` column names each input's shape (the class of an `@<class>`
input, else its preset), so `KillMatrixResult.shape_summary` says which shape class witnessed what.

Output folder (`write` at the end, parts as tasks finish):

```
outcomes/<settings hash>/<mutant>-<cells hash>.parquet   one part per finished task (resume)
mutants.parquet   inputs.parquet   outcomes.parquet   manifest.json
```

A rerun with the same settings reads the parts and computes only missing cells. Tables are
sorted and hold no timestamps, so two runs give identical tables.

>>> from mutagym.mutants.killmatrix import MutantRecord, KillMatrixSettings, run_killmatrix
>>> m = MutantRecord("relu-id", "relu", "input_domain", "relu-returns-x", SOURCE)  # doctest: +SKIP
>>> result = run_killmatrix([m], KillMatrixSettings(out="km", num_cpus=2))         # doctest: +SKIP
>>> result.summary()                                                               # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..rewards.shapes import COSTLY_CLASSES, SHAPE_SEEDS, cost, representative_seed
from ..rewards.judging import BUILD_FAULTS, OK, OUTCOMES
from ..rewards.scoring import POPULATIONS, summarize_shapes
from .ray_pool import RayPool, worker_label

__all__ = ["CELL_OUTCOMES", "CEILINGS_SCHEMA", "INPUTS_SCHEMA", "KillMatrixResult", "KillMatrixSettings",
           "MUTANTS_SCHEMA", "MutantRecord", "OUTCOMES_SCHEMA", "PART_SCHEMA", "SHAPE_GENERATORS", "as_records",
           "PRESET_GENERATORS", "candidate_inputs", "ceilings_table", "load_mutants", "preset_draws",
           "run_killmatrix", "run_task", "settings_table", "shape_class_table", "shape_classes_for",
           "summarize_shapes", "summary_table"]

#: A cell's outcomes: the judging core's (`ok`: survived, `wrong`: killed, and the kernel faults).
CELL_OUTCOMES = OUTCOMES
#: The cells' format: part files of another format are computed again, never reused.
CELL_FORMAT = 2

OUTCOMES_SCHEMA = pa.schema([
    ("mutant_id", pa.string()), ("input_id", pa.string()), ("schedule", pa.string()),
    ("outcome", pa.string()), ("max_abs", pa.float64()), ("max_rel", pa.float64()),
    ("mismatch_ratio", pa.float64()), ("tol_needed", pa.float64()), ("tol_needed_p99", pa.float64()),
    ("message", pa.string()),
])
#: A part file also keys each cell by what produced it, so a resumed run never reuses a cell whose
#: mutant source or input arrays (or tolerance) changed under the same ids.
PART_SCHEMA = pa.schema(list(OUTCOMES_SCHEMA) + [("source_sha", pa.string()), ("input_sha", pa.string())])
INPUTS_SCHEMA = pa.schema([
    ("id", pa.string()), ("problem", pa.string()), ("generator", pa.string()), ("preset", pa.string()),
    ("seed", pa.int64()), ("valid", pa.bool_()), ("reason", pa.string()), ("max_abs", pa.float64()),
    ("max_rel", pa.float64()), ("tolerance_used", pa.float64()), ("shape_class", pa.string()),
])
CEILINGS_SCHEMA = pa.schema([
    ("problem", pa.string()), ("preset", pa.string()), ("seed", pa.int64()),
    ("largest_valid_scale", pa.float64()), ("first_invalid_scale", pa.float64()), ("reason", pa.string()),
])
MUTANTS_SCHEMA = pa.schema([
    ("mutant_id", pa.string()), ("problem", pa.string()), ("family", pa.string()), ("rule", pa.string()),
    ("line", pa.int32()), ("source_sha256", pa.string()), ("cells", pa.int64()),
    ("witnessed", pa.bool_()), ("survived_everything", pa.bool_()), ("witnesses", pa.list_(pa.string())),
    ("source", pa.string()), ("diff", pa.string()), ("population", pa.string()),
])


# ---------------------------------------------------------------------------------- settings
#: The generators a shape class is drawn with by default: one ordinary dense-random family, the
#: one the pool of record's coverage inputs use (`envs.pool.SHAPE_GENERATOR`). Every generator on
#: every class would multiply the catalog's inputs by about 6 (1,664 classes x 22 generators
#: against 4,041 inputs); one family adds 1,664 small inputs (5.7 M elements in all, against
#: about 660 M for the presets).
SHAPE_GENERATORS = ("sign_mixed",)
#: The generators each costly fixed preset is drawn with by default; `tiny` and the shape classes
#: are not named, so they keep every generator asked for. `official`, `remainder` and
#: `large_reduction` are about 92 % of the matrix's volume (emulated elements x mutants).
#: benchmarks/bench_preset_cut.py measured, on the whole catalog (5,485 mutants and field faults,
#: 2026-12-02), which of their families some fault needs as its last witness: dropping the costliest
#: (preset, family) first while every fault keeps one leaves these, 31.5 % of their volume. The
#: pool of record still draws the others (`envs.pool.POOL_PRESET_GENERATORS`).
PRESET_GENERATORS = {
    "official": ("uniform01", "large_magnitude", "sparse"),
    "remainder": ("sign_mixed", "scaled_x3", "sparse", "one_hot", "monotone"),
    "large_reduction": ("large_magnitude", "sparse", "monotone"),
}


def preset_draws(preset_generators: dict[str, tuple[str, ...]] | None, preset: str, generator: str) -> bool:
    """Whether a preset -> generators restriction (`KillMatrixSettings.preset_generators`) lets
    `preset` be drawn with `generator`: a preset it does not name takes every generator."""
    only = preset_generators or {}
    return preset not in only or generator in only[preset]


@dataclass
class KillMatrixSettings:
    """Everything that determines a kill matrix run (printed first, stored in the manifest).

    Shapes are the problem's fixed presets and its shape classes (`rewards.shapes`). By default
    (`presets` and `shape_classes` both None) a run takes every preset and every class the problem
    offers except `rewards.shapes.COSTLY_CLASSES` (the cheap classes the pool of record's coverage
    inputs use), each class drawn with `SHAPE_GENERATORS` only (one family: every generator on
    every class would cost about 6 times the inputs) at the representative instance of `shape_seeds` seeds per
    entry of `seeds` (seed s tries seeds s * shape_seeds .. (s + 1) * shape_seeds - 1; for seed 0
    the instance the pool's coverage input uses). Naming `presets` names the shapes: classes are
    then run only when `shape_classes` names them too. Which shapes ran changes which inputs exist,
    never a cell's value, so it is not in `fingerprint`: a rerun with more classes reuses every
    stored cell and computes only the new inputs' cells.
    """

    out: str = "killmatrix"
    """output folder (tables, manifest, part files)"""
    generators: tuple[str, ...] | None = None
    """generator names; None: every generator in `rewards.generators.GENERATORS`"""
    presets: tuple[str, ...] | None = None
    """shape presets; None: every preset of each problem (a missing one is skipped)"""
    seeds: tuple[int, ...] = (0,)
    """seeds of each generator x preset (and of each shape class, see `shape_seeds`)"""
    shape_classes: tuple[str, ...] | None = None
    """shape classes drawn as presets `@<class>`; None: every class of each problem but
    `rewards.shapes.COSTLY_CLASSES` when `presets` is None too, else none; a class the problem
    does not offer is skipped"""
    shape_generators: tuple[str, ...] | None = SHAPE_GENERATORS
    """generators each shape class is drawn with; None: those of `generators` (about 6 times the
    inputs of the default on the catalog)"""
    preset_generators: dict[str, tuple[str, ...]] | None = field(default_factory=lambda: dict(PRESET_GENERATORS))
    """preset -> the generators (of `generators`) it is drawn with; a preset not named here takes
    every generator; None: every preset takes every generator"""
    shape_seeds: int = SHAPE_SEEDS
    """seeds tried per class and seed, one instance kept (`rewards.shapes.representative_seed`)"""
    schedules: tuple[str, ...] = ("ascending", "descending")
    """thread orders the cells run under: the first on every input, the others as
    `later_schedules_max_elements` says"""
    later_schedules_max_elements: int | None = 1 << 12
    """the schedules after the first run only on inputs whose largest tensor has at most this many
    elements (`rewards.shapes.cost`); None: on every input. A thread order shows on any shape with
    more than one block, and the race detector names unordered accesses in the first order: on the
    first 2,421 mutants of the issue-17 rebuild (checks on, second schedule up to 2^16 elements),
    2 of 2,065 killed mutants were killed by the second order only, both on the tiny presets too
    (6 and 12 elements). Without the checks (the 4,954-mutant matrix) 6 were killed so only above
    2^12 elements: 5 are quarantined by today's pool, the sixth is a data_race in the first order.
    So the second order runs on the tiny shapes (the tiny preset, the smallest classes): about a
    quarter of the inputs (21 of relu's 81), the cheapest, where at 2^16 it cost 30-50 % of a task"""
    backend: str = "cpu"
    """runtime backend"""
    timeout_s: float = 10.0
    """per-run timeout"""
    inputs_per_task: int | None = None
    """split a mutant's inputs into tasks of this many; None: one task per mutant"""
    address: str | None = None
    """Ray cluster to attach to; None: $RAY_ADDRESS, else a local cluster"""
    num_cpus: int | None = None
    """CPUs of a local cluster; None: all"""
    max_retries: int = 3
    """retries of a task whose worker died"""
    progress: bool = True
    """rich progress bar"""
    ceiling: bool = False
    """also measure each problem's validity ceiling into `ceilings.parquet` (slow on long reductions)"""
    pid_dir: str | None = None
    """operations/testing: each task writes an empty file `<mutant>.<pid>` here when it starts"""

    def fingerprint(self) -> str:
        """Hash of the settings that change cell values (what part files are keyed by).

        >>> KillMatrixSettings(num_cpus=1).fingerprint() == KillMatrixSettings(num_cpus=2).fingerprint()
        True
        >>> KillMatrixSettings(timeout_s=1).fingerprint() == KillMatrixSettings().fingerprint()
        False
        >>> KillMatrixSettings(shape_classes=()).fingerprint() == KillMatrixSettings().fingerprint()
        True
        """
        key = {"backend": self.backend, "timeout_s": self.timeout_s, "cells": CELL_FORMAT}
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class MutantRecord:
    """The kill matrix's view of a wrong kernel: id, problem, fault family, rule and full source;
    `population` is `mutant` (a rule applied to a substrate) or `field` (a kernel of a field-fault
    set, its family `field` and its rule the set's `kind`)."""

    id: str
    problem: str
    family: str
    rule: str
    source: str
    line: int = -1
    diff: str = ""
    population: str = "mutant"

    def __post_init__(self) -> None:
        if self.population not in POPULATIONS:
            raise ValueError(f"mutant record {self.id!r}: population must be one of {POPULATIONS}, "
                             f"got {self.population!r}")


def as_records(mutants: Iterable) -> list[MutantRecord]:
    """`MutantRecord`s from `mutants.generate.Mutant`s, dicts (`id` or `mutant_id`) or records.

    >>> as_records([{"mutant_id": "m1", "problem": "relu", "source": "..."}])[0]
    MutantRecord(id='m1', problem='relu', family='', rule='', source='...', line=-1, diff='', population='mutant')
    >>> as_records([{"id": "m1", "problem": "relu"}])
    Traceback (most recent call last):
    ...
    ValueError: mutant record "{'id': 'm1', 'problem': 'relu'}" lacks source
    """
    out = []
    for m in mutants:
        if isinstance(m, MutantRecord):
            out.append(m)
            continue
        d = m if isinstance(m, dict) else (m.to_dict() if hasattr(m, "to_dict") else vars(m))
        mid = d.get("id", d.get("mutant_id"))
        missing = [k for k, v in (("id", mid), ("problem", d.get("problem")), ("source", d.get("source")))
                   if not v]
        if missing:
            raise ValueError(f"mutant record {str(d)[:120]!r} lacks {', '.join(missing)}")
        out.append(MutantRecord(str(mid), d["problem"], d.get("family") or "", d.get("rule") or "",
                                d["source"], int(d.get("line", -1) if d.get("line") is not None else -1),
                                d.get("diff") or "", d.get("population") or "mutant"))
    ids = [m.id for m in out]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"duplicate mutant ids: {dup[:5]}")
    return out


def _safe_name(text: str) -> str:
    """`text` usable as a file name (a mutant id may hold any character)."""
    import re
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80]
    return safe if safe == text else f"{safe}.{_sha(text)[:8]}"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------- the task
@dataclass(frozen=True)
class _Task:
    mutant_id: str
    source: str
    problem: str
    cells: tuple[tuple[str, tuple[int, ...]], ...]   # (schedule, indices into the problem bundle)
    backend: str
    timeout_s: float
    pid_dir: str | None


def _cell(mutant_id, input_id, schedule, outcome, stats=(None, None, None, None, None), message=""):
    """One cell. `tol_needed` (`_p99`): the smallest atol = rtol at which the mutant's output passes
    with matched ratio 1 (0.99), so the matrix can be re-scored under other checkers' tolerances."""
    return {"mutant_id": mutant_id, "input_id": input_id, "schedule": schedule, "outcome": outcome,
            "max_abs": stats[0], "max_rel": stats[1], "mismatch_ratio": stats[2],
            "tol_needed": stats[3], "tol_needed_p99": stats[4], "message": message}


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


#: The last problem's cases and references, prepared once and kept by the worker process (tasks
#: go out grouped by problem, so the next task usually reuses them): references ready for
#: comparison (`rewards.comparator.Reference`), cases whose inputs are the same read-only
#: arrays task after task, so the runtime keeps them in device memory (`runtime.buffers.frozen`),
#: and the outputs judged so far (`rewards.judging.JudgedOutputs`: a mutant that computes an
#: input exactly as an earlier one did is not compared again: about half the cells, 1.07x per task
#: on eight reduction problems, the same rows).
_prepared: dict[str, tuple[list, list[dict], object]] = {}


def _prepared_problem(bundle: dict) -> tuple[list, list[dict], object]:
    from ..rewards.comparator import Reference
    from ..rewards.judging import JudgedOutputs
    from ..runtime.buffers import frozen
    key = bundle["key"]
    if key not in _prepared:
        _prepared.clear()
        cases = [replace(case, inputs={name: a if frozen(a) else _read_only_copy(a)
                                       for name, a in case.inputs.items()})
                 for case in bundle["cases"]]
        references = [{name: Reference(expected) for name, expected in refs.items()}
                      for refs in bundle["references"]]
        _prepared[key] = cases, references, JudgedOutputs()
    return _prepared[key]


def _read_only_copy(array: np.ndarray) -> np.ndarray:
    copy = np.array(array)
    copy.flags.writeable = False
    return copy


def run_task(task: _Task, bundles: dict) -> dict:
    """Run one task on a worker: compile the mutant once, judge its cells through the judging core
    (`rewards.judging.judge_cases`); kernel faults are outcomes. Schedules over the same inputs run
    in one batch (the buffers laid out once); a later schedule's cheap inputs are a batch of
    their own."""
    from ..rewards.comparator import Comparator
    from ..rewards.judging import build_fault, judge_cases
    from ..runtime import SubmissionError, compile

    if task.pid_dir:
        Path(task.pid_dir, f"{task.mutant_id}.{os.getpid()}").touch()
    bundle = bundles[task.problem]
    if not isinstance(bundle, dict):    # an ObjectRef: each problem's inputs are put once
        import ray
        bundle = ray.get(bundle)
    ids = bundle["ids"]
    cases, refs, seen = _prepared_problem(bundle)
    try:
        kernel = compile(task.source, backend=task.backend)
    except SubmissionError as err:
        fault = build_fault(err)
        msg = f"{fault}: {str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__}"
        rows = [_cell(task.mutant_id, ids[i], schedule, fault, message=msg)
                for schedule, idx in task.cells for i in idx]
        return {"rows": rows, "worker": worker_label()}
    comparator = Comparator(**bundle["comparator"])
    by_inputs: dict[tuple[int, ...], list[str]] = {}    # schedules over the same inputs run in one batch
    for schedule, idx in task.cells:
        by_inputs.setdefault(tuple(idx), []).append(schedule)
    judged = {}
    for idx, schedules in by_inputs.items():
        runs = judge_cases(kernel, [ids[i] for i in idx], [cases[i] for i in idx], [refs[i] for i in idx],
                           comparator, schedules, timeout_s=task.timeout_s, measure=True, seen=seen)
        judged.update({s: dict(zip(idx, runs[s])) for s in schedules})
    rows = []
    for schedule, idx in task.cells:
        for i in idx:
            case = judged[schedule][i]
            stats = ((case.max_abs, case.max_rel, case.mismatch_ratio, case.tol_needed, case.tol_needed_p99)
                     if case.outputs else (None,) * 5)
            rows.append(_cell(task.mutant_id, case.input_id, schedule, case.outcome, stats, case.message))
    return {"rows": rows, "worker": worker_label()}


# ---------------------------------------------------------------------------------- result
@dataclass
class KillMatrixResult:
    """What `run_killmatrix` wrote and did.

    `computed_cells` ran in this call, `reused_cells` came from part files of an earlier run;
    `kill_seconds` is the wall time of the Ray phase only (cells/s = computed_cells / kill_seconds).
    """

    out: Path
    mutants: pa.Table
    inputs: pa.Table
    outcomes: pa.Table
    manifest: dict
    computed_cells: int = 0
    reused_cells: int = 0
    kill_seconds: float = 0.0
    ceilings: list = field(default_factory=list)

    def witnesses(self) -> dict[str, list[str]]:
        """mutant id -> the valid inputs that kill it (sorted)."""
        d = self.mutants.to_pydict()
        return dict(zip(d["mutant_id"], d["witnesses"]))

    def summary(self) -> list[dict]:
        """Per problem and family: mutants, witnessed, survived everything, and the rest (`other`:
        mutants that did not build, or whose problem has no valid input)."""
        d = self.mutants.to_pydict()
        groups: dict[tuple[str, str], dict] = {}
        for i, mid in enumerate(d["mutant_id"]):
            g = groups.setdefault((d["problem"][i], d["family"][i]), {
                "problem": d["problem"][i], "family": d["family"][i], "mutants": 0, "witnessed": 0,
                "survived_everything": 0, "other": 0})
            g["mutants"] += 1
            g["witnessed"] += int(d["witnessed"][i])
            g["survived_everything"] += int(d["survived_everything"][i])
            g["other"] += int(not d["witnessed"][i] and not d["survived_everything"][i])
        return [groups[k] for k in sorted(groups)]

    def shape_summary(self) -> list[dict]:
        """Per shape class (the inputs table's `shape_class`: a class of `rewards.shapes`, or a
        fixed preset): `kind` (`class` or `preset`), problems and valid inputs of that shape,
        mutants it `witnessed` (some valid input of that shape kills them) and mutants it witnessed
        `only` (every witness of the mutant has that shape). Sorted: presets, then classes, by name.
        """
        return summarize_shapes(self.inputs.to_pylist(), self.mutants.column("witnesses").to_pylist())


# ---------------------------------------------------------------------------------- driver
def shape_classes_for(problem, settings: KillMatrixSettings) -> list[str]:
    """The shape classes a kill matrix draws for `problem` (see `KillMatrixSettings`), in
    `rewards.shapes.SHAPE_CLASSES` order; an unknown class name raises KeyError naming the known."""
    from ..rewards.shapes import SHAPE_CLASSES, shape_classes
    if settings.shape_classes is None:
        wanted = () if settings.presets is not None else tuple(c for c in SHAPE_CLASSES if c not in COSTLY_CLASSES)
    else:
        wanted = settings.shape_classes
    unknown = [c for c in wanted if c not in SHAPE_CLASSES]
    if unknown:
        raise KeyError(f"unknown shape class {unknown[0]!r}; known: {', '.join(SHAPE_CLASSES)}")
    offered = shape_classes(problem)
    return [c for c in SHAPE_CLASSES if c in wanted and c in offered]


def candidate_inputs(problem, settings: KillMatrixSettings, extra: Sequence[str] = ()) -> list:
    """The inputs a kill matrix gates for `problem`: each generator x shape preset x seed of
    `settings` (every generator and every preset of the problem by default; a preset of
    `settings.preset_generators`, such as `official`, with its generators only), then each shape
    class x seed x shape generator (`shape_classes_for`; the class instance is the representative
    of `settings.shape_seeds` draws, `rewards.shapes.representative_seed`), as presets `@<class>`,
    then the input ids of `extra` not drawn already (field faults' witnesses, rebuilt by
    `rewards.moves.generate_from_id`; an id of another problem raises ValueError).

    >>> from mutagym.substrates.catalog import load_problem
    >>> ids = [g.id for g in candidate_inputs(load_problem("relu"), KillMatrixSettings(
    ...     generators=("uniform01",), presets=("tiny",), shape_classes=("mod4_2",)))]
    >>> ids[0], ids[1].rsplit(":", 1)[0]
    ('relu:uniform01:tiny:0', 'relu:sign_mixed:@mod4_2')
    """
    from ..rewards.generators import GENERATORS, generate
    gens = settings.generators or tuple(GENERATORS)
    shape_gens = gens if settings.shape_generators is None else settings.shape_generators
    unknown = [g for g in (*gens, *shape_gens) if g not in GENERATORS]
    if unknown:
        raise KeyError(f"unknown generator {unknown[0]!r}; known: {', '.join(GENERATORS)}")
    presets = [p for p in (settings.presets or problem.preset_names) if p in problem.preset_names]
    only = settings.preset_generators or {}
    unknown = [g for names in only.values() for g in names if g not in GENERATORS]
    if unknown:
        raise KeyError(f"unknown generator {unknown[0]!r} in preset_generators; known: {', '.join(GENERATORS)}")
    out = [generate(problem, g, preset=p, seed=s) for g in gens for p in presets
           if preset_draws(only, p, g) for s in settings.seeds]
    for cls in shape_classes_for(problem, settings):
        for s in settings.seeds:
            seed = representative_seed(problem, cls, range(s * settings.shape_seeds,
                                                           (s + 1) * settings.shape_seeds))
            if seed is not None:
                out += [generate(problem, g, preset=f"@{cls}", seed=seed) for g in shape_gens]
    return out + _extra_inputs(problem, extra, {g.id for g in out})


def _extra_inputs(problem, ids: Sequence[str], drawn: set[str]) -> list:
    from ..rewards.generators import parse_input_id
    from ..rewards.moves import generate_from_id
    out = []
    for input_id in dict.fromkeys(ids):
        if parse_input_id(input_id)[0] != problem.id:
            raise ValueError(f"extra input {input_id!r} is not an input of problem {problem.id!r}")
        if input_id not in drawn:
            out.append(generate_from_id(input_id))
    return out


def _gate(problem, settings: KillMatrixSettings, extra: Sequence[str] = ()):
    """Candidates (`candidate_inputs`), their validity and the bundle of valid inputs a task needs."""
    from ..rewards.judging import comparator_for, shared_cache
    from ..rewards.validity import check_validity
    from ..runtime import RunCase

    candidates = candidate_inputs(problem, settings, extra)
    scalars = problem.scalar_values()
    refs = [shared_cache().reference(problem, g) for g in candidates]
    comparator = comparator_for(problem)
    verdicts = check_validity(problem, candidates, comparator, backend=settings.backend,
                              schedules=settings.schedules, timeout_s=settings.timeout_s, references=refs)
    valid = sorted((i for i, v in enumerate(verdicts) if v.valid), key=lambda i: candidates[i].id)
    bundle = {
        "ids": [candidates[i].id for i in valid],
        "cases": [RunCase(candidates[i].inputs, problem.output_specs(candidates[i].dims),
                          candidates[i].dims, scalars) for i in valid],
        "references": [refs[i] for i in valid],
        "comparator": {"atol": comparator.atol, "rtol": comparator.rtol,
                       "matched_ratio": comparator.matched_ratio, "nan_matches": comparator.nan_matches},
    }
    bundle["digests"] = {candidates[i].id: _input_digest(candidates[i], scalars, bundle["comparator"])
                         for i in valid}
    bundle["elements"] = {candidates[i].id: cost(problem, candidates[i].dims).elements for i in valid}
    bundle["key"] = _sha(json.dumps([problem.id, sorted(bundle["digests"].items())]))[:16]
    rows = [{"id": v.input.id, "problem": problem.id, "generator": v.input.generator,
             "preset": v.input.preset, "seed": v.input.seed, "valid": v.valid, "reason": v.reason,
             "max_abs": _finite(v.max_abs), "max_rel": _finite(v.max_rel),
             "tolerance_used": _finite(v.tolerance_used),
             "shape_class": v.input.preset[1:] if v.input.preset.startswith("@") else v.input.preset}
            for v in verdicts]
    return rows, bundle


def _input_digest(g, scalars, comparator) -> str:
    """What a cell's verdict depends on besides the mutant: arrays, dims, scalars, tolerance."""
    h = hashlib.sha256(json.dumps([g.dims, scalars, comparator], sort_keys=True).encode())
    for name in sorted(g.inputs):
        arr = np.ascontiguousarray(g.inputs[name])
        h.update(f"{name}:{arr.dtype.name}:{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def _read_parts(part_dir: Path) -> list[dict]:
    rows = []
    for path in sorted(part_dir.glob("*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def _write_atomic(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def _sorted_table(rows: list[dict], schema: pa.Schema, keys: Sequence[str]) -> pa.Table:
    rows = sorted(rows, key=lambda r: tuple(r[k] for k in keys))
    return pa.Table.from_pylist(rows, schema=schema)


def run_killmatrix(mutants: Iterable, settings: KillMatrixSettings | None = None,
                   extra_inputs: Mapping[str, Sequence[str]] | None = None) -> KillMatrixResult:
    """Build (or resume) the kill matrix of `mutants` over their problems' valid inputs.

    `mutants` are `mutants.generate.Mutant`s, dicts or `MutantRecord`s (id, problem, family, rule,
    source, population). `extra_inputs` maps a problem to input ids that join its candidates (the
    witnesses of field faults, and from `harden` every scored checker's own inputs; the validity
    gate decides on them as on the others). Writes the
    tables of the module docstring under `settings.out` and returns them.
    Raises `ray_pool.TaskFailedError` / `WorkerLostError` (naming the mutant, inputs and worker)
    when a task cannot be completed; every finished task is already stored, so a rerun resumes.
    """
    settings = settings or KillMatrixSettings()
    records = sorted(as_records(mutants), key=lambda m: m.id)
    out = Path(settings.out)
    part_dir = out / "outcomes" / settings.fingerprint()
    part_dir.mkdir(parents=True, exist_ok=True)
    if settings.pid_dir:
        Path(settings.pid_dir).mkdir(parents=True, exist_ok=True)

    problems = sorted({m.problem for m in records})
    pool_args = dict(address=settings.address, num_cpus=settings.num_cpus, max_retries=settings.max_retries,
                     progress=settings.progress)
    with RayPool(**pool_args, description="validity gate (problems)") as pool:
        import ray
        # one task per problem: the gate of a problem costs as much as a few mutants
        input_rows, gated = [], {}
        for i, (rows, bundle) in pool.map_unordered(_gate_task, problems, shared=[settings, dict(extra_inputs or {})],
                                                    labels=[f"validity gate of {p}" for p in problems]):
            input_rows += rows
            gated[problems[i]] = {"ids": bundle["ids"], "digests": bundle["digests"],
                                  "elements": bundle["elements"], "ref": ray.put(bundle)}
        with RayPool(**pool_args, description="kill matrix") as kill_pool:   # the same cluster
            rows, computed, reused, kill_seconds = _kill(kill_pool, records, gated, settings, part_dir)

    outcomes = _sorted_table(rows, OUTCOMES_SCHEMA, ("mutant_id", "input_id", "schedule"))
    inputs = _sorted_table(input_rows, INPUTS_SCHEMA, ("problem", "id"))
    mutants_table = _mutants_table(records, outcomes)
    ceilings = _ceilings(problems, settings) if settings.ceiling else []
    return _write(out, settings, mutants_table, inputs, outcomes, ceilings, computed, reused, kill_seconds)


def _gate_task(problem_id: str, settings: KillMatrixSettings, extra_inputs: Mapping[str, Sequence[str]]):
    from ..substrates.catalog import load_problem
    return _gate(load_problem(problem_id), settings, extra_inputs.get(problem_id, ()))


def _schedules_of(elements: int, settings: KillMatrixSettings) -> tuple[str, ...]:
    """The schedules an input whose largest tensor has *elements* elements runs under."""
    limit = settings.later_schedules_max_elements
    return settings.schedules if limit is None or elements <= limit else settings.schedules[:1]


def _kill(pool: RayPool, records: list[MutantRecord], bundles: dict, settings: KillMatrixSettings,
          part_dir: Path) -> tuple[list[dict], int, int, float]:
    """Every cell of `records` over the gated inputs (`bundles`: problem -> ids, digests and the
    object-store `ref` of its bundle): stored ones from part files, the rest run on `pool`, each
    finished task stored as a part. Returns (rows, computed, reused, seconds of the Ray phase)."""
    # which cells exist, which are stored already
    expected = {(m.id, iid, s) for m in records for iid in bundles[m.problem]["ids"]
                for s in _schedules_of(bundles[m.problem]["elements"][iid], settings)}
    source_sha = {m.id: _sha(m.source)[:16] for m in records}
    problem_of = {m.id: m.problem for m in records}
    stored = {}
    for r in _read_parts(part_dir):
        key = (r["mutant_id"], r["input_id"], r["schedule"])
        if (key in expected and r.get("source_sha") == source_sha[key[0]]
                and r.get("input_sha") == bundles[problem_of[key[0]]]["digests"][key[1]]):
            stored.setdefault(key, {k: r[k] for k in OUTCOMES_SCHEMA.names})
    tasks, labels = [], []
    for m in sorted(records, key=lambda m: (m.problem, m.id)):   # a worker's next task reuses its references
        ids = bundles[m.problem]["ids"]
        missing = {s: tuple(i for i, iid in enumerate(ids)
                            if (m.id, iid, s) in expected and (m.id, iid, s) not in stored)
                   for s in settings.schedules}
        indices = sorted({i for idx in missing.values() for i in idx})
        step = settings.inputs_per_task or max(len(indices), 1)
        for lo in range(0, len(indices), step):
            chunk = set(indices[lo:lo + step])
            cells = tuple((s, tuple(i for i in missing[s] if i in chunk)) for s in settings.schedules)
            cells = tuple(c for c in cells if c[1])
            tasks.append(_Task(m.id, m.source, m.problem, cells, settings.backend, settings.timeout_s,
                               settings.pid_dir))
            first = ids[min(chunk)]
            labels.append(f"mutant {m.id} ({m.problem}/{m.rule or '?'}) on {len(chunk)} input(s) from "
                          f"{first}")

    computed = 0
    rows = list(stored.values())
    if not tasks:
        return rows, computed, len(stored), 0.0
    weights = [sum(len(idx) for _, idx in t.cells) for t in tasks]
    refs = {pid: b["ref"] for pid, b in bundles.items()}
    for i, result in pool.map_unordered(run_task, tasks, shared=[refs], weights=weights, labels=labels):
        task_rows = result["rows"]
        digests = bundles[tasks[i].problem]["digests"]
        keyed = [{**r, "source_sha": source_sha[r["mutant_id"]], "input_sha": digests[r["input_id"]]}
                 for r in task_rows]
        key = _sha(json.dumps(sorted((r["input_id"], r["schedule"]) for r in task_rows)))[:12]
        _write_atomic(_sorted_table(keyed, PART_SCHEMA, ("input_id", "schedule")),
                      part_dir / f"{_safe_name(tasks[i].mutant_id)}-{key}.parquet")
        rows += task_rows
        computed += len(task_rows)
    return rows, computed, len(stored), pool.elapsed_s


def _mutants_table(records: list[MutantRecord], outcomes: pa.Table) -> pa.Table:
    by_mutant: dict[str, dict] = {m.id: {"cells": 0, "witnesses": set(), "survived": 0} for m in records}
    o = outcomes.to_pydict()
    for mid, iid, outcome in zip(o["mutant_id"], o["input_id"], o["outcome"]):
        b = by_mutant[mid]
        b["cells"] += 1
        if outcome == OK:
            b["survived"] += 1
        elif outcome not in BUILD_FAULTS:    # a refused launch is input-dependent: it detects
            b["witnesses"].add(iid)
    rows = []
    for m in records:
        b = by_mutant[m.id]
        rows.append({"mutant_id": m.id, "problem": m.problem, "family": m.family, "rule": m.rule,
                     "line": m.line, "source_sha256": _sha(m.source), "cells": b["cells"],
                     "witnessed": bool(b["witnesses"]),
                     "survived_everything": b["cells"] > 0 and b["survived"] == b["cells"],
                     "witnesses": sorted(b["witnesses"]), "source": m.source, "diff": m.diff,
                     "population": m.population})
    return pa.Table.from_pylist(rows, schema=MUTANTS_SCHEMA)


def _ceilings(problems, settings) -> list[dict]:
    from ..rewards.validity import validity_ceiling
    from ..substrates.catalog import load_problem
    rows = []
    for pid in problems:
        r = validity_ceiling(load_problem(pid), backend=settings.backend, timeout_s=settings.timeout_s)
        rows.append({"problem": r.problem, "preset": r.preset, "seed": r.seed,
                     "largest_valid_scale": r.largest_valid_scale,
                     "first_invalid_scale": r.first_invalid_scale, "reason": r.reason})
    return rows


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(out: Path, settings, mutants, inputs, outcomes, ceilings, computed, reused, kill_seconds):
    import pyarrow
    import ray

    tables = {"mutants.parquet": mutants, "inputs.parquet": inputs, "outcomes.parquet": outcomes}
    if ceilings:
        tables["ceilings.parquet"] = pa.Table.from_pylist(ceilings, schema=CEILINGS_SCHEMA)
    hashes = {}
    for name, table in tables.items():
        _write_atomic(table, out / name)
        hashes[name] = _file_sha(out / name)
    try:
        from importlib.metadata import version
        mutagym_version = version("mutagym")
    except Exception:  # not installed as a distribution
        mutagym_version = "unknown"
    counts = {o: 0 for o in CELL_OUTCOMES}
    for o in outcomes.column("outcome").to_pylist():
        counts[o] = counts.get(o, 0) + 1
    manifest = {
        "tables": hashes,
        "rows": {name: t.num_rows for name, t in tables.items()},
        "outcome_counts": counts,
        "settings": {k: v for k, v in asdict(settings).items() if k not in ("progress", "pid_dir")},
        "settings_fingerprint": settings.fingerprint(),
        "versions": {"mutagym": mutagym_version, "ray": ray.__version__, "pyarrow": pyarrow.__version__,
                     "numpy": np.__version__, "python": platform.python_version()},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=list) + "\n")
    return KillMatrixResult(out, mutants, inputs, outcomes, manifest, computed, reused, kill_seconds,
                            ceilings)


# ---------------------------------------------------------------------------------- CLI helpers
def load_mutants(problems: Sequence[str] | None = None, pool: str | None = None,
                 out: str | None = None) -> list[MutantRecord]:
    """The mutants of `problems` that may enter the kill matrix.

    From a Parquet pool file when `pool` is given (rows the compile gate or the quarantine did not
    pass, `status` other than `compilable`, are dropped); else the pool is built with
    `mutants.pool.build_pool` under `<out>/pool` (generate, compile gate, quarantine; resumable),
    or, where that builder is unavailable, generated with `mutants.generate` without a gate.
    """
    if pool:
        if out is not None and Path(pool).resolve() == (Path(out) / "mutants.parquet").resolve():
            raise ValueError(f"--pool {pool!r} is the kill matrix's own output table "
                             f"{str(Path(out) / 'mutants.parquet')!r}; pass another --out")
        rows = pq.read_table(pool).to_pylist()
        rows = [r for r in rows if r.get("status") in (None, "compilable")
                and (not problems or r["problem"] in problems)]
        return as_records(rows)
    try:
        from .pool import build_pool
    except ImportError:
        build_pool = None
    if build_pool is not None and out is not None:
        built = build_pool(Path(out) / "pool", list(problems) if problems else None)
        return load_mutants(problems, str(built.path))
    from .generate import generate_pool
    return as_records(generate_pool(list(problems) if problems else None).mutants)


def settings_table(settings: KillMatrixSettings):
    """The settings as a rich table (printed before a run)."""
    from rich.table import Table
    table = Table(title="kill matrix settings")
    table.add_column("setting")
    table.add_column("value")
    def shown(v) -> str:
        if v is None:
            return "-"
        if isinstance(v, dict):
            return "; ".join(f"{k}: {shown(x)}" for k, x in v.items())
        return ", ".join(map(str, v)) if isinstance(v, tuple) else str(v)
    for k, v in asdict(settings).items():
        table.add_row(k, shown(v))
    table.add_row("settings fingerprint (derived)", settings.fingerprint())
    return table


def ceilings_table(result: KillMatrixResult):
    """The validity ceilings of a run with `ceiling=True` (a rich table), or None."""
    if not result.ceilings:
        return None
    from rich.table import Table
    table = Table(title="validity ceiling: sign-mixed input scaled until a correct kernel fails")
    for col in ("problem", "preset", "largest valid scale", "first invalid scale", "reason"):
        table.add_column(col)
    for c in result.ceilings:
        table.add_row(c["problem"], c["preset"], f"{c['largest_valid_scale']:g}" if c["largest_valid_scale"] else "none",
                      f"{c['first_invalid_scale']:g}" if c["first_invalid_scale"] else "-", c["reason"][:100])
    return table


def shape_class_table(result: KillMatrixResult):
    """Per shape class (fixed presets first): problems, valid inputs, mutants witnessed, and
    mutants only that class witnessed (a rich table; `KillMatrixResult.shape_summary`)."""
    from rich.table import Table
    rows = result.shape_summary()
    table = Table(title="kill matrix by shape class (presets, then classes of rewards.shapes)")
    for col in ("shape class", "kind", "problems", "valid inputs", "mutants witnessed", "witnessed only here"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["shape_class"], r["kind"], str(r["problems"]), str(r["valid_inputs"]),
                      str(r["witnessed"]), str(r["only"]))
    return table


def summary_table(result: KillMatrixResult):
    """Per problem and family: mutants, witnessed, survived everything (a rich table), followed by
    `shape_class_table` (both in a `rich.console.Group`, which prints as the two tables)."""
    from rich.console import Group
    from rich.table import Table
    rows = result.summary()
    table = Table(title=f"kill matrix: {result.mutants.num_rows} mutants, {result.outcomes.num_rows} cells "
                        f"({result.computed_cells} computed, {result.reused_cells} reused)")
    keys = ("mutants", "witnessed", "survived_everything", "other")
    for col in ("problem", "family", "mutants", "witnessed", "survived everything",
                "other (no build / no valid input)"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["problem"], r["family"], *(str(r[k]) for k in keys))
    table.add_row("all", "", *(str(sum(r[k] for r in rows)) for k in keys))
    return Group(table, shape_class_table(result))
