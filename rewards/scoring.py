"""Scoring a checker version on a kill matrix: detection of witnessed mutants and false rejects.

A kill matrix (`mutants.killmatrix`) holds, for every mutant x valid input x schedule, the outcome
under the problem's own tolerance *and* `tol_needed` / `tol_needed_p99`: the smallest t at which
`Comparator(atol=t, rtol=t)` accepts the mutant's output with matched ratio 1 / 0.99. So a matrix
computed once re-scores exactly under any checker whose atol equals its rtol (every preset):

| cell outcome | killed under a comparator with atol = rtol = t |
| --- | --- |
| `wrong`, `ok` | `tol_needed > t` (matched ratio 1) or `tol_needed_p99 > t` (ratio 0.99) |
| `memory_fault`, `sync_error`, `data_race`, `stateful_kernel`, `timeout`, `crash`, `forbidden_syscall`, `launch_error` | always |
| `source_error`, `compile_error` | never (it depends on no input; such a mutant is never witnessed) |

A checker *kills* a mutant when any of its suite inputs for the mutant's problem kills it in any
schedule of the matrix. Its suite inputs are looked up by id among the matrix's valid inputs; ids
the matrix does not hold (another seed, preset or generator than the run used) are `missing`, and
a checker with a missing input is *not measured* (`CheckerScore.measured`): what its inputs that
were run kill is only a lower bound, and a checker none of whose inputs ran would read as
detecting nothing. Reports and tables show such a score as "not measured", never as a rate
(`mutants.harden.harden` gives the matrix every scored checker's inputs, so its scores are all
measured). Inputs the matrix holds but its validity gate refused (a correct kernel fails them)
never run on mutants: they count as the checker's false rejects, not as detections.

Exactness: the rule above is exact for matched ratio 1 or 0.99 with atol == rtol. For a comparator
with atol != rtol the matrix's own verdict is used when the comparator is the problem's own
tolerance (exact), else `tol_needed > max(atol, rtol)` (a lower bound on kills); for another
matched ratio in (0.99, 1) the p99 column is used (a lower bound as well), below 0.99 the p99
column over-counts. `CheckerScore.exact` says whether every problem was scored exactly.

Detection counts only *witnessed* mutants (some valid input of the matrix kills them, in the
matrix's own verdict), per family and per problem, with a percentile bootstrap over problems
(`suites.bootstrap_interval`).

False rejects: every correct kernel (substrate and variants) of each problem runs on the
checker's inputs as `checker.evaluate_source` runs it (`CorrectRuns` runs each kernel once per
input, whatever number of checkers judge it); a kernel the checker does not accept is a false
reject (the `fuzz` preset's largest magnitudes reject correct fp32 kernels).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from .attribution import Attribution, attribute
from .checker import CheckerVersion, crossed
from .comparator import Comparator
from .judging import BUILD_FAULTS, OK, RUN_FAULTS, WRONG, comparator_for
from .suites import DetectionReport, Rate, bootstrap_interval, detection_rate

__all__ = ["CheckerScore", "CorrectRuns", "FalseReject", "FAULT_OUTCOMES", "KillMatrix", "POPULATIONS",
           "attribute_checkers", "cell_killed", "false_rejects", "kill_rule", "killed_by", "load_killmatrix", "median_inputs",
           "score_checker", "summarize_shapes"]

#: Cell outcomes that reject a mutant under any tolerance: the runs that did not finish.
FAULT_OUTCOMES = RUN_FAULTS
#: The fault populations of a kill matrix: mutants of our rules, and field faults (kernels of a
#: field-fault set, `rewards.field_faults`).
POPULATIONS = ("mutant", "field")
#: Cell words of kill matrices written before the judging core's vocabulary, read as its words.
LEGACY_OUTCOMES = {"killed": WRONG, "survived": OK}


# ---------------------------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------------------------

@dataclass
class KillMatrix:
    """A kill matrix folder read back: its tables as row lists, indexed for scoring.

    `mutants` rows hold no source (not needed to score); `outcomes_of[mutant]` lists that
    mutant's cells; `valid_inputs[problem]` the sorted ids of the problem's valid inputs;
    `input_rows[id]` every input row (valid or not).
    """

    out: Path
    mutants: list[dict]
    inputs: list[dict]
    outcomes: list[dict]
    manifest: dict
    outcomes_of: dict[str, list[dict]] = field(default_factory=dict)
    valid_inputs: dict[str, list[str]] = field(default_factory=dict)
    input_rows: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for r in self.outcomes:
            self.outcomes_of.setdefault(r["mutant_id"], []).append(r)
        for r in self.inputs:
            self.input_rows[r["id"]] = r
            if r["valid"]:
                self.valid_inputs.setdefault(r["problem"], []).append(r["id"])
        for ids in self.valid_inputs.values():
            ids.sort()

    @property
    def problems(self) -> list[str]:
        """The problems that have mutants in the matrix, sorted."""
        return sorted({m["problem"] for m in self.mutants})

    @property
    def problem_of(self) -> dict[str, str]:
        return {m["mutant_id"]: m["problem"] for m in self.mutants}

    @property
    def family_of(self) -> dict[str, str]:
        return {m["mutant_id"]: m["family"] or "?" for m in self.mutants}

    @property
    def population_of(self) -> dict[str, str]:
        """mutant id -> fault population: `mutant`, or `field` for a field fault (tables written
        before populations existed hold mutants only)."""
        return {m["mutant_id"]: m.get("population") or "mutant" for m in self.mutants}

    def witnessed(self, problems: Iterable[str] | None = None) -> list[str]:
        """Ids of the mutants some valid input kills (in the matrix's verdict), sorted."""
        keep = set(problems) if problems is not None else None
        return sorted(m["mutant_id"] for m in self.mutants
                      if m["witnessed"] and (keep is None or m["problem"] in keep))

    def content_hash(self) -> str:
        """sha256 of the canonical JSON of the manifest's table hashes: names the matrix's data
        (not the folder it sits in, nor the library versions that wrote it)."""
        tables = self.manifest.get("tables", {})
        return hashlib.sha256(json.dumps(tables, sort_keys=True).encode()).hexdigest()

    def manifest_sha256(self) -> str:
        """sha256 of `manifest.json` as written (empty string when the folder has none)."""
        path = self.out / "manifest.json"
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def load_killmatrix(source: str | os.PathLike | Any) -> KillMatrix:
    """A `KillMatrix` from a kill-matrix folder (`mutants.parquet`, `inputs.parquet`,
    `outcomes.parquet`, `manifest.json`) or a `KillMatrixResult`.

    A folder missing a table raises `FileNotFoundError` naming the table and the command that
    writes it. Cells written with the earlier words (`killed`, `survived`) read as `wrong`, `ok`.
    """
    if hasattr(source, "outcomes") and hasattr(source, "mutants"):
        mutants = source.mutants.drop_columns(["source", "diff"]).to_pylist()
        return KillMatrix(Path(source.out), mutants, source.inputs.to_pylist(),
                          source.outcomes.to_pylist(), dict(source.manifest))
    folder = Path(source)
    for name in ("mutants.parquet", "inputs.parquet", "outcomes.parquet"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name} not found: is {str(folder)!r} a kill-matrix "
                                    "folder? (`mutagym killmatrix --out DIR` writes one)")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    columns = [c for c in pq.read_schema(folder / "mutants.parquet").names if c not in ("source", "diff")]
    outcomes = pq.read_table(folder / "outcomes.parquet").to_pylist()
    for row in outcomes:
        row["outcome"] = LEGACY_OUTCOMES.get(row["outcome"], row["outcome"])
    return KillMatrix(folder, pq.read_table(folder / "mutants.parquet", columns=columns).to_pylist(),
                      pq.read_table(folder / "inputs.parquet").to_pylist(), outcomes, manifest)


def summarize_shapes(inputs: Iterable[dict], witnesses: Iterable[Sequence[str] | None]) -> list[dict]:
    """`mutants.killmatrix.KillMatrixResult.shape_summary` from the inputs table's rows and each
    mutant's witnesses (also for a matrix read back by `load_killmatrix`; a matrix written before
    the `shape_class` column reads the class off the preset, `@<class>`)."""
    groups: dict[str, dict] = {}
    shape_of = {}
    for r in inputs:
        preset = r["preset"]
        shape = r.get("shape_class") or (preset[1:] if preset.startswith("@") else preset)
        shape_of[r["id"]] = shape
        g = groups.setdefault(shape, {"shape_class": shape, "kind": "class" if preset.startswith("@") else "preset",
                                      "problems": set(), "valid_inputs": 0, "witnessed": 0, "only": 0})
        if r["valid"]:
            g["problems"].add(r["problem"])
            g["valid_inputs"] += 1
    for ws in witnesses:
        shapes = {shape_of[w] for w in ws or () if w in shape_of}
        for shape in shapes:
            groups[shape]["witnessed"] += 1
        if len(shapes) == 1:
            groups[next(iter(shapes))]["only"] += 1
    rows = [{**g, "problems": len(g["problems"])} for g in groups.values()]
    return sorted(rows, key=lambda r: (r["kind"] == "class", r["shape_class"]))


# ---------------------------------------------------------------------------------------------
# the kill rule
# ---------------------------------------------------------------------------------------------

def _problem_comparator(problem: str) -> Comparator:
    from ..substrates.catalog import load_problem
    return comparator_for(load_problem(problem))


def kill_rule(comparator: Comparator, matrix_comparator: Comparator | None = None) -> tuple[str, float, bool]:
    """`(column, threshold, exact)`: how a cell is re-scored under `comparator`.

    `column` is `tol_needed`, `tol_needed_p99` or `outcome` (reuse the matrix's own verdict, when
    `comparator` is the matrix's `matrix_comparator`).

    >>> kill_rule(Comparator(1e-2, 1e-2))
    ('tol_needed', 0.01, True)
    >>> kill_rule(Comparator(1e-2, 1e-2, matched_ratio=0.99))
    ('tol_needed_p99', 0.01, True)
    >>> kill_rule(Comparator(1e-3, 1e-2))
    ('tol_needed', 0.01, False)
    """
    if matrix_comparator is not None and comparator == matrix_comparator and comparator.atol != comparator.rtol:
        return "outcome", math.nan, True
    exact = comparator.atol == comparator.rtol
    t = max(comparator.atol, comparator.rtol)
    if comparator.matched_ratio >= 1.0:
        return "tol_needed", t, exact
    return "tol_needed_p99", t, exact and comparator.matched_ratio == 0.99


def cell_killed(row: Mapping[str, Any], column: str, threshold: float) -> bool:
    """Whether one kill-matrix cell rejects the mutant under the rule `kill_rule` gave.

    >>> cell_killed({"outcome": "ok", "tol_needed": 2e-3}, "tol_needed", 1e-3)
    True
    >>> cell_killed({"outcome": "wrong", "tol_needed": 2e-3}, "tol_needed", 1e-2)
    False
    >>> cell_killed({"outcome": "memory_fault", "tol_needed": None}, "tol_needed", 1e-2)
    True
    """
    outcome = row["outcome"]
    if outcome in BUILD_FAULTS:
        return False
    if outcome not in (WRONG, OK):
        return True
    if column == "outcome":
        return outcome == WRONG
    need = row.get(column)
    if need is None or (isinstance(need, float) and math.isnan(need)):
        return outcome == WRONG             # a matrix without the column: its own verdict
    return need > threshold


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------

def _killed_in_problem(checker: CheckerVersion, km: KillMatrix, problem: str,
                       mutant_ids: Sequence[str]) -> tuple[set[str], list[str], list[str], list[str], bool]:
    """(killed mutants, used input ids, missing input ids, invalid input ids, exact) of one problem."""
    wanted = list(dict.fromkeys(checker.input_ids_for(problem)))
    valid = set(km.valid_inputs.get(problem, []))
    known = km.input_rows
    used = [i for i in wanted if i in valid]
    missing = [i for i in wanted if i not in known]
    invalid = [i for i in wanted if i in known and i not in valid]
    column, threshold, exact = kill_rule(checker.comparator_for(problem), _problem_comparator(problem))
    used_set = set(used)
    killed = set()
    for m in mutant_ids:
        if any(r["input_id"] in used_set and cell_killed(r, column, threshold)
               for r in km.outcomes_of.get(m, ())):
            killed.add(m)
    return killed, used, missing, invalid, exact


def killed_by(checker: CheckerVersion, km: KillMatrix, problems: Iterable[str] | None = None) -> set[str]:
    """Ids of the matrix's mutants (of `problems`, default all) that `checker` kills."""
    problems = list(problems) if problems is not None else km.problems
    by_problem: dict[str, list[str]] = {}
    for m in km.mutants:
        by_problem.setdefault(m["problem"], []).append(m["mutant_id"])
    killed: set[str] = set()
    for p in problems:
        killed |= _killed_in_problem(checker, km, p, by_problem.get(p, []))[0]
    return killed


@dataclass(frozen=True)
class FalseReject:
    """A correct kernel the checker rejected: which, where, and the verdict's message."""

    problem: str
    kernel: str
    outcome: str
    message: str


@dataclass
class CheckerScore:
    """One checker version scored on a kill matrix.

    `report` is the detection of the witnessed pool (overall / per family / per problem),
    `interval` the `(point, low, high)` bootstrap over problems; `inputs_used` / `missing_inputs`
    the suite ids per problem found / not found in the matrix, `invalid_inputs` those the matrix
    holds but its validity gate refused (a correct kernel fails them: never run on mutants);
    `false_rejects` is None when not measured. With a missing input the detection figures are
    those of the inputs that ran, a lower bound: `measured` is False and no report shows them.
    """

    checker: str
    name: str
    killed: set[str]
    witnessed: list[str]
    report: DetectionReport
    interval: tuple[float, float, float]
    inputs_used: dict[str, list[str]]
    missing_inputs: dict[str, list[str]]
    exact: bool
    false_rejects: list[FalseReject] | None = None
    kernels_checked: int = 0
    invalid_inputs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def detection(self) -> float:
        return self.report.overall.rate

    @property
    def measured(self) -> bool:
        """Whether the matrix ran every input of the checker on the scored problems (else its
        detection is no figure to show: see the module doc)."""
        return not self.missing_inputs

    @property
    def escaped(self) -> list[str]:
        """Witnessed mutants the checker accepts."""
        return [m for m in self.witnessed if m not in self.killed]

    def rate_on(self, mutant_ids: Iterable[str]) -> float:
        """Detection on a subset of the witnessed pool (nan when empty)."""
        ms = [m for m in mutant_ids]
        return sum(m in self.killed for m in ms) / len(ms) if ms else math.nan

    def leaked_reward(self) -> dict[str, Any]:
        """The reward a binary reward (1 on accept, 0 on reject) pays to wrong kernels: 1 for each
        witnessed mutant the checker accepts, overall, per family and per problem, with its share
        of the witnessed pool (what `mutagym audit` compares between versions)."""
        def leak(rate: Rate) -> dict[str, Any]:
            left = rate.total - rate.detected
            return {"leaked": left, "witnessed": rate.total, "share": _num(left / rate.total if rate.total else math.nan)}

        r = self.report
        return {**leak(r.overall), "per_family": {k: leak(v) for k, v in r.per_family.items()},
                "per_problem": {k: leak(v) for k, v in r.per_problem.items()}}

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "checker": self.checker, "name": self.name, "measured": self.measured,
            "detection": _num(self.detection) if self.measured else None,
            "interval": [_num(x) if self.measured else None for x in self.interval],
            "witnessed": len(self.witnessed),
            "detected": self.report.overall.detected if self.measured else None, "exact": self.exact,
            "per_family": ({k: [v.detected, v.total] for k, v in self.report.per_family.items()}
                           if self.measured else None),
            "per_problem": ({k: [v.detected, v.total] for k, v in self.report.per_problem.items()}
                            if self.measured else None),
            "inputs_used": {k: len(v) for k, v in self.inputs_used.items()},
            "missing_inputs": self.missing_inputs,
            "invalid_inputs": self.invalid_inputs,
            "false_rejects": None if self.false_rejects is None else [vars(f) for f in self.false_rejects],
            "kernels_checked": self.kernels_checked,
        }


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


class CorrectRuns:
    """Outputs of every correct kernel (substrate and variants) of a problem on given inputs,
    each (kernel, input) run once and judged by any number of checkers.

    Checkers that share inputs (KernelBench's U[0, 1) seeds are in four presets) or differ only in
    tolerance (a hardened checker before and after its tolerance is restored) need no second run:
    only the comparator differs. Runs are `evaluate_source`'s: ascending schedule, one `run_batch`
    per kernel over the inputs not run yet. `prepare` does all the work (runs and references), so it
    can go to a background thread while nothing else touches the object.
    """

    def __init__(self, *, backend: str = "cpu", timeout_s: float = 30.0) -> None:
        self.backend, self.timeout_s = backend, timeout_s
        self._inputs: dict[tuple[str, str], Any] = {}                # (problem, input id) -> GeneratedInput
        self._kernels: dict[tuple[str, str], Any] = {}               # (problem, kernel) -> Kernel or error
        self._results: dict[tuple[str, str], dict[str, Any]] = {}    # (problem, kernel) -> input id -> result

    def _run(self, pid: str, refs: Sequence[Any]) -> list[str]:
        """The input ids of `refs`, after generating the new ones, computing their fp64 references
        and running every correct kernel of `pid` on them (one batch per kernel)."""
        from ..runtime import RunCase, SubmissionError, compile
        from ..substrates.catalog import load_problem
        from .judging import shared_cache
        problem = load_problem(pid)
        scalars = problem.scalar_values()
        ids = []
        for r in refs:
            key = (pid, r.id_for(pid))
            if key not in self._inputs:
                g = self._inputs[key] = r.generate(problem)
                shared_cache().reference(problem, g)
            ids.append(key[1])
        for name, source in problem.kernel_sources().items():
            key = (pid, name)
            done = self._results.setdefault(key, {})
            todo = [i for i in dict.fromkeys(ids) if i not in done]
            if not todo:
                continue
            if key not in self._kernels:
                try:
                    self._kernels[key] = compile(source, backend=self.backend)
                except SubmissionError as err:
                    self._kernels[key] = err
            kernel = self._kernels[key]
            if isinstance(kernel, SubmissionError):
                continue
            gs = [self._inputs[(pid, i)] for i in todo]
            cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, scalars) for g in gs]
            done.update(zip(todo, kernel.run_batch(cases, timeout_s=self.timeout_s)))
        return ids

    def prepare(self, checkers: Iterable[CheckerVersion], problems: Iterable[str]) -> None:
        """Run, in one batch per kernel, every input any of `checkers` has for `problems`."""
        checkers = list(checkers)
        for pid in problems:
            self._run(pid, [r for c in checkers for r in c.inputs_for(pid)])

    def false_rejects(self, checker: CheckerVersion, problems: Iterable[str]) -> tuple[list[FalseReject], int]:
        """`(rejections, kernels checked)`: each correct kernel's verdict under `checker` that is
        not `accepted` is a false reject (a kernel that does not build is one, `compile_error`)."""
        from ..runtime import SubmissionError
        from ..substrates.catalog import load_problem
        from .checker import _judge
        rejects, checked = [], 0
        for pid in problems:
            refs = checker.inputs_for(pid)
            if not refs:
                continue
            ids = self._run(pid, refs)
            p = load_problem(pid)
            for name in p.kernel_sources():
                kernel, results = self._kernels[(pid, name)], self._results[(pid, name)]
                checked += 1
                if isinstance(kernel, SubmissionError):
                    rejects.append(FalseReject(pid, name, "compile_error", f"compile_error: {kernel}"))
                    continue
                v = _judge(checker, p, [self._inputs[(pid, i)] for i in ids], [results[i] for i in ids])
                if not v.accepted:
                    rejects.append(FalseReject(pid, name, v.outcome, v.message))
        return rejects, checked


def false_rejects(checker: CheckerVersion, problems: Iterable[str], *, backend: str = "cpu",
                  timeout_s: float = 30.0, runs: CorrectRuns | None = None) -> tuple[list[FalseReject], int]:
    """`(rejections, kernels checked)`: every correct kernel of `problems` judged by `checker`
    (see `CorrectRuns`; pass `runs` to share runs between checkers)."""
    runs = runs or CorrectRuns(backend=backend, timeout_s=timeout_s)
    return runs.false_rejects(checker, problems)


def score_checker(checker: CheckerVersion, km: KillMatrix | str | os.PathLike, *,
                  problems: Iterable[str] | None = None, check_false_rejects: bool = False,
                  backend: str = "cpu", n_boot: int = 2000, seed: int = 0,
                  runs: CorrectRuns | None = None) -> CheckerScore:
    """Score `checker` on the witnessed mutants of kill matrix `km` (a folder or `KillMatrix`).

    Detection is overall, per family and per problem, with a 95 % bootstrap interval over
    problems (`(nan, nan, nan)` when nothing is witnessed). With `check_false_rejects`, every
    correct kernel of the scored problems is also judged by `checker` (real compiles and runs,
    shared through `runs` when given).
    """
    km = km if isinstance(km, KillMatrix) else load_killmatrix(km)
    problems = sorted(problems) if problems is not None else km.problems
    by_problem: dict[str, list[str]] = {}
    for m in km.mutants:
        by_problem.setdefault(m["problem"], []).append(m["mutant_id"])
    killed: set[str] = set()
    used, missing, invalid, exact = {}, {}, {}, True
    for p in problems:
        k, u, miss, bad, ex = _killed_in_problem(checker, km, p, by_problem.get(p, []))
        killed |= k
        used[p] = u
        if miss:
            missing[p] = miss
        if bad:
            invalid[p] = bad
        exact &= ex
    witnessed = km.witnessed(problems)
    report = detection_rate(killed, witnessed, family_of=km.family_of, problem_of=km.problem_of)
    if witnessed:
        interval = bootstrap_interval(killed, witnessed, km.problem_of, n_boot=n_boot, seed=seed)
    else:
        interval = (math.nan, math.nan, math.nan)
    score = CheckerScore(checker.version_id, checker.name, killed & set(witnessed), witnessed, report,
                         interval, used, missing, exact, invalid_inputs=invalid)
    if check_false_rejects:
        score.false_rejects, score.kernels_checked = false_rejects(checker, problems, backend=backend, runs=runs)
    return score


def attribute_checkers(a: CheckerVersion, b: CheckerVersion, km: KillMatrix | str | os.PathLike, *,
                       problems: Iterable[str] | None = None) -> Attribution:
    """Split `b`'s detection gain over `a` on the matrix's witnessed pool into inputs and
    tolerance (`attribution.attribute` over `checker.crossed` versions)."""
    km = km if isinstance(km, KillMatrix) else load_killmatrix(km)
    problems = list(problems) if problems is not None else km.problems
    versions = {"a": a, "b": b}

    def detected(i: str, c: str) -> set[str]:
        x, y = versions[i], versions[c]
        return killed_by(x if i == c else crossed(x, y), km, problems)

    return attribute(detected, "a", "b", witnessed=km.witnessed(problems))


def median_inputs(score: CheckerScore) -> float:
    """Median number of the checker's inputs per problem found in the matrix."""
    counts = [len(v) for v in score.inputs_used.values()]
    return float(np.median(counts)) if counts else math.nan
