"""Hardening: per-problem input suites chosen on a kill matrix, a per-problem tolerance, and the
`hardened` checker version they make; `harden` runs the whole pipeline.

Per problem (`harden_checker`):

1. Candidates are the problem's valid inputs in the matrix (every correct kernel passes them at the
   problem's tolerance); `K[i, j]` is True when input j kills mutant i in some schedule (faults
   included, build errors not; `rewards.scoring.cell_killed`).
2. The witnessed mutants are split 50/50 by `rewards.suites.hash_split`; `select_suite` picks at
   most `budget` inputs (HiGHS when small, greedy otherwise, deterministic ties) on the *selection*
   half only, and that suite is what ships, so the held-out half measures it honestly. When the
   cover needs fewer inputs than the budget, `fill_budget` spends the rest on second
   witnesses of the selection half's mutants from another generator (redundancy that carries to
   unseen mutants).
   A problem with no witnessed mutant gets the valid input that kills most (or the first valid
   input in id order) so that it is still checked. A suite with no ordinary dense-random input
   (`rewards.generators.ORDINARY_GENERATORS`) gets the most-killing one on top of its budget: targeted
   inputs alone (two large-magnitude ones) hide faults an ordinary input shows, such as a dropped
   log-sum-exp term.
3. Tolerance: the problem's own tolerance is the default. Where atol == rtol, it is tightened to the
   smallest of `t0 x (1, 1/3, 1/10, 1/30, 1/100)` that keeps `SAFETY` (10) times headroom over the
   legitimate error the correct kernels showed on *the suite's own inputs* (the inputs table's
   `tolerance_used x t0` is exactly their worst `tol_needed`). The rule only tightens where the
   data shows room; `harden` then runs every correct kernel through the hardened checker and puts
   back the default tolerance of any problem that rejected one, so it ships with zero false
   rejects on the catalog.

The checker version is `hardened`: per-problem `suites` and `comparators`, a default suite
(`inputs`) for problems outside the matrix (a user's own task), and provenance (kill-matrix hash,
budget, salt, settings, the default suite's choice per family, date). Saved as
`<name>-<hash12>.json` by `CheckerVersion.save`.

The default suite is taxonomy-guided (`taxonomy_suite`): generators are role-driven (each recipe
shapes a problem's data roles and perturbs its affine ones whatever the problem) and presets are
shape-driven (`official`, `remainder` exist for every problem), so a (generator, preset) pair means
the same thing on any problem. Across the matrix's problems, the pair that kills most witnessed
mutants opens the suite (the paper's dense random input), then each fault family, most witnessed
first, adds the pair that kills most of its mutants still alive: at most one input per family.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..rewards.checker import CheckerVersion, ComparatorSpec, InputRef, list_checkers, load_checker
from ..rewards.generators import GENERATORS, ORDINARY_GENERATORS, parse_input_id
from ..rewards.scoring import (CheckerScore, CorrectRuns, FalseReject, KillMatrix, cell_killed, kill_rule,
                               load_killmatrix, score_checker)
from ..rewards.suites import fill_budget, hash_split, select_suite
from ..substrates.catalog import list_problems, load_problem
from .field import FieldFaults, field_false_rejects, gate_false_rejects, load_field_faults
from .killmatrix import KillMatrixSettings, load_mutants, run_killmatrix
from .pool import build_pool

__all__ = ["HardenResult", "HardenSummary", "ProblemHardening", "QUICK_PRESETS", "QUICK_PROBLEMS",
           "SAFETY", "TIGHTEN_STEPS", "harden", "harden_checker", "kill_matrix_for", "scored_inputs",
           "taxonomy_suite"]

#: `--quick`: three problems and two shape presets, and every scored checker's inputs (about a
#: minute on 2 cores with warm compile caches, two on a first run).
QUICK_PROBLEMS: tuple[str, ...] = ("relu", "softmax", "layernorm")
QUICK_PRESETS: tuple[str, ...] = ("official", "remainder")
#: Headroom kept between the correct kernels' measured error and a tightened tolerance.
SAFETY = 10.0
#: Tolerances tried, as fractions of the problem's own, loosest first.
TIGHTEN_STEPS: tuple[float, ...] = (1.0, 1 / 3, 1 / 10, 1 / 30, 1 / 100)


def kill_matrix_for(km: KillMatrix, problem: str, threshold: tuple[str, float] | None = None
                    ) -> tuple[np.ndarray, list[str], list[str]]:
    """`(K, mutant_ids, input_ids)` of one problem over its valid inputs; `threshold` is a
    `(column, t)` kill rule (default: the matrix's own verdict).

    A cell is killed per `rewards.scoring.cell_killed`; mutants are the problem's (sorted), inputs its
    valid ones (sorted).
    """
    column, t = threshold or ("outcome", math.nan)
    mutant_ids = sorted(m["mutant_id"] for m in km.mutants if m["problem"] == problem)
    input_ids = km.valid_inputs.get(problem, [])
    col = {x: j for j, x in enumerate(input_ids)}
    K = np.zeros((len(mutant_ids), len(input_ids)), bool)
    for i, m in enumerate(mutant_ids):
        for r in km.outcomes_of.get(m, ()):
            j = col.get(r["input_id"])
            if j is not None and not K[i, j] and cell_killed(r, column, t):
                K[i, j] = True
    return K, mutant_ids, input_ids


@dataclass
class ProblemHardening:
    """What hardening chose for one problem and why."""

    problem: str
    suite: list[str]
    method: str
    optimal: bool
    witnessed: int
    selection: list[str]
    heldout: list[str]
    selection_rate: float
    heldout_rate: float
    default_tol: tuple[float, float, float]
    tol: float | None
    legit_need: float
    note: str = ""

    def comparator(self) -> ComparatorSpec:
        atol, rtol, ratio = self.default_tol
        if self.tol is None:
            return ComparatorSpec(atol=atol, rtol=rtol, matched_ratio=ratio)
        return ComparatorSpec(atol=self.tol, rtol=self.tol, matched_ratio=ratio)


@dataclass
class HardenResult:
    """The hardened checker and the per-problem choices it came from."""

    checker: CheckerVersion
    problems: dict[str, ProblemHardening]

    @property
    def selection(self) -> list[str]:
        return [m for p in self.problems.values() for m in p.selection]

    @property
    def heldout(self) -> list[str]:
        return [m for p in self.problems.values() for m in p.heldout]


def _tightened(km: KillMatrix, suite: Sequence[str], default: tuple[float, float, float]
               ) -> tuple[float | None, float, str]:
    """(tolerance or None for the default, the legitimate need on the suite, a note)."""
    atol, rtol, _ = default
    if atol != rtol:
        return None, math.nan, "atol != rtol: default tolerance kept"
    need = 0.0
    for x in suite:
        used = km.input_rows[x].get("tolerance_used")
        if used is None:
            return None, math.nan, f"no legitimate-error data for {x}: default kept"
        need = max(need, used * atol)
    safe = [atol * f for f in TIGHTEN_STEPS if need * SAFETY <= atol * f]
    if not safe:
        return None, need, "no headroom: default kept"
    t = min(safe)
    return (None if t == atol else float(f"{t:.3g}")), need, ""


def _fallback_input(K: np.ndarray, input_ids: Sequence[str]) -> list[str]:
    if not input_ids:
        return []
    kills = K.sum(axis=0) if K.size else np.zeros(len(input_ids), int)
    official = [j for j, x in enumerate(input_ids) if parse_input_id(x)[2] == "official"]
    pool = official or list(range(len(input_ids)))
    best = max(pool, key=lambda j: (kills[j], -j))
    return [input_ids[best]]


def _ordinary_input(K: np.ndarray, input_ids: Sequence[str], chosen: Sequence[str]) -> str | None:
    """The ordinary dense-random input a suite without one gets (None when it has one or the
    matrix holds none): the most-killing valid one, official shape first, then id order."""
    def ordinary(x: str) -> bool:
        return parse_input_id(x)[1] in ORDINARY_GENERATORS
    if any(ordinary(x) for x in chosen):
        return None
    candidates = [j for j, x in enumerate(input_ids) if ordinary(x)]
    if not candidates:
        return None
    kills = K.sum(axis=0) if K.size else np.zeros(len(input_ids), int)
    best = min(candidates, key=lambda j: (-kills[j], parse_input_id(input_ids[j])[2] != "official", input_ids[j]))
    return input_ids[best]


def _harden_problem(km: KillMatrix, problem: str, budget: int, salt: str, tighten: bool,
                    exact: bool | str) -> ProblemHardening:
    t = load_problem(problem).spec.tolerance
    default = (t.atol, t.rtol, t.matched_ratio)
    K, mutant_ids, input_ids = kill_matrix_for(km, problem)
    witnessed_rows = K.any(axis=1)
    witnessed = [m for m, w in zip(mutant_ids, witnessed_rows) if w]
    selection, heldout = hash_split(witnessed, salt)
    note = ""
    if not input_ids:
        return ProblemHardening(problem, [], "none", False, 0, [], [], math.nan, math.nan, default,
                                None, math.nan, "no valid input in the matrix")
    index = {m: i for i, m in enumerate(mutant_ids)}
    if selection:
        Ks = K[[index[m] for m in selection]]
        suite = select_suite(Ks, input_ids, selection, budget=budget, exact=exact)
        chosen, method, optimal = suite.inputs, suite.method, suite.optimal
        filled = fill_budget(Ks, input_ids, [input_ids.index(x) for x in chosen], budget,
                             kind=lambda x: parse_input_id(x)[1])
        if len(filled) > len(chosen):
            chosen, method = [input_ids[j] for j in filled], f"{method}+fill"
    else:
        chosen, method, optimal = [], "none", False
    if not chosen:
        chosen, method, note = _fallback_input(K, input_ids), "fallback", "no mutant to cover: most-killing input"
    ordinary = _ordinary_input(K, input_ids, chosen)
    if ordinary:
        chosen, note = [*chosen, ordinary], "; ".join(x for x in (note, f"ordinary input {ordinary} added") if x)
    tol, need, tol_note = _tightened(km, chosen, default) if tighten else (None, math.nan, "not tightened")
    ph = ProblemHardening(problem, list(chosen), method, optimal, len(witnessed), selection, heldout,
                          math.nan, math.nan, default, tol, need, "; ".join(x for x in (note, tol_note) if x))
    return ph


def harden_checker(km: KillMatrix | str | os.PathLike, *, problems: Iterable[str] | None = None,
                   budget: int = 2, salt: str = "heldout", tighten: bool = True,
                   exact: bool | str = "auto", name: str = "hardened",
                   settings: dict[str, Any] | None = None, date: str | None = None) -> HardenResult:
    """The hardened checker version of the problems in kill matrix `km` (see the module doc).

    `settings` is stored in the provenance next to the kill matrix's hash and the budget; `date`
    (default: today, UTC) is provenance that the content hash leaves out.
    """
    km = km if isinstance(km, KillMatrix) else load_killmatrix(km)
    if budget < 1:
        raise ValueError(f"budget must be >= 1 input per problem, got {budget!r}")
    problems = sorted(problems) if problems is not None else km.problems
    unknown = [p for p in problems if p not in km.problems]
    if unknown:
        raise ValueError(f"problems {unknown} have no mutants in the kill matrix at {str(km.out)!r} "
                         f"(it holds {', '.join(km.problems) or 'none'})")
    per = {p: _harden_problem(km, p, budget, salt, tighten, exact) for p in problems}
    suites = {p: [InputRef(generator=g, preset=pr, seed=s) for _, g, pr, s in map(parse_input_id, ph.suite)]
              for p, ph in per.items() if ph.suite}
    return _assemble(km, per, suites, budget, salt, tighten, name, settings, date)


def taxonomy_suite(km: KillMatrix, problems: Iterable[str]) -> tuple[list[InputRef], dict[str, str]]:
    """`(suite, choice per family)`: the default suite for a problem outside the matrix.

    Inputs are named by role- and shape-driven recipes (generator x shape preset), so one choice
    applies to any problem. A pair's strength in a family is how many witnessed mutants of that
    family, over `problems`, some valid input of that pair kills. The suite opens with the pair that
    kills most overall (the dense random input), then, family by family (most witnessed first), adds
    the pair killing most of that family's mutants the suite does not kill yet (none when it kills
    them all). Ties: official shape first, then generator name. Generators that exist to reject
    correct kernels (`false_reject_control`) are never chosen: validity cannot be checked on an
    unknown problem; nor are inputs of other recipes than `GENERATORS` (a field fault's witness
    may be of a problem's value family). Seeds are 0.
    """
    killers: dict[str, set[tuple[str, str]]] = {}       # mutant -> pairs that kill it
    for p in problems:
        K, mutant_ids, input_ids = kill_matrix_for(km, p)
        pairs = [parse_input_id(x)[1:3] for x in input_ids]
        for m, row in zip(mutant_ids, K):
            hit = {pairs[j] for j in np.flatnonzero(row)    # a field witness may be of a value family
                   if pairs[j][0] in GENERATORS and "false_reject_control" not in GENERATORS[pairs[j][0]].targets}
            if hit:
                killers[m] = hit
    family_of = km.family_of
    families = Counter(family_of[m] for m in killers)

    def best(mutants: list[str]) -> tuple[tuple[str, str] | None, int]:
        counts = Counter(pair for m in mutants for pair in killers[m])
        if not counts:
            return None, 0
        pair = min(counts, key=lambda q: (-counts[q], q[1] != "official", q))
        return pair, counts[pair]

    dense, _ = best(list(killers))
    chosen = [dense] if dense else []
    per_family: dict[str, str] = {}
    for f, _ in sorted(families.items(), key=lambda kv: (-kv[1], kv[0])):
        left = [m for m in killers if family_of[m] == f and not killers[m] & set(chosen)]
        pair, gain = best(left)
        if pair is not None and gain:
            chosen.append(pair)
        per_family[f] = ":".join(pair) if gain else "covered"
    if not chosen:
        chosen = [("normal", "official")]
    return [InputRef(generator=g, preset=pr, seed=0) for g, pr in chosen], per_family


def _assemble(km, per, suites, budget, salt, tighten, name, settings, date) -> HardenResult:
    default_inputs, default_choice = taxonomy_suite(km, sorted(per))
    settings = dict(settings or {})
    km_settings = {k: v for k, v in km.manifest.get("settings", {}).items() if k not in ("out", "address", "num_cpus")}
    checker = CheckerVersion(
        name=name,
        description=(f"mutation-optimised suites of <= {budget} inputs per problem over "
                     f"{len(per)} problem(s); tolerance tightened only with {SAFETY:g}x headroom "
                     "over the correct kernels' measured error"),
        source="mutagym harden (rewards.harden)",
        inputs=default_inputs,
        suites=suites,
        comparator=ComparatorSpec(atol=1e-2, rtol=1e-2, matched_ratio=1.0),
        comparators={p: ph.comparator() for p, ph in per.items() if ph.suite},
        provenance=json.loads(json.dumps({       # plain JSON (tuples -> lists), as it reloads
            "killmatrix_hash": km.content_hash(),
            "killmatrix_tables": km.manifest.get("tables", {}),
            "killmatrix_settings": km_settings,
            "budget": budget, "salt": salt, "tighten": tighten, "safety": SAFETY,
            "default_suite": {"per_family": default_choice,
                              "rule": "rewards.harden.taxonomy_suite: most-killing generator x shape, "
                                      "then per fault family the pair killing most of what is left"},
            "problems": sorted(per),
            "settings": settings,
            "date": date or _dt.datetime.now(_dt.timezone.utc).date().isoformat(),
        })))
    result = HardenResult(checker, per)
    _fill_rates(km, result)
    return result


def _fill_rates(km: KillMatrix, result: HardenResult) -> None:
    """Selection / held-out detection of each problem's shipped suite under its final comparator."""
    for p, ph in result.problems.items():
        if not ph.suite:
            continue
        column, t, _ = kill_rule(result.checker.comparator_for(p))
        if ph.tol is None:
            column, t = "outcome", math.nan         # the default: the matrix's own verdict
        K, mutant_ids, input_ids = kill_matrix_for(km, p, (column, t))
        index = {m: i for i, m in enumerate(mutant_ids)}
        cols = [input_ids.index(x) for x in ph.suite]

        def rate(ms):
            if not ms:
                return math.nan
            return float(K[np.ix_([index[m] for m in ms], cols)].any(axis=1).mean())

        ph.selection_rate, ph.heldout_rate = rate(ph.selection), rate(ph.heldout)


# ---------------------------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------------------------

@dataclass
class HardenSummary:
    """What `harden` did: the kill matrix, every checker's score, the hardened checker and files,
    and the wall time of each stage (`stage_seconds`, in the report and `--json`)."""

    out: Path
    problems: list[str]
    killmatrix: Path
    result: HardenResult
    checker_path: Path
    scores: dict[str, CheckerScore]
    report: Path | None
    seconds: float
    restored_default: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    field_faults: FieldFaults | None = None
    field_rejects: dict[str, list[FalseReject]] | None = None
    """per checker (and the gate, `rewards.report.GATE_ROW`): the field sets' correct kernels it
    rejects; None when not measured"""

    def rows(self) -> list[dict[str, Any]]:
        """One row per checker: detection (+ interval), selection / held-out, false rejects, inputs.
        A checker the matrix did not run every input of (`CheckerScore.measured` False) has None
        for each detection figure: "not measured", never a rate."""
        sel, held = self.result.selection, self.result.heldout
        out = []
        for name, s in self.scores.items():
            pool = set(s.witnessed)
            fr = None if s.false_rejects is None else len(s.false_rejects)
            counts = [len(v) for v in s.inputs_used.values()]

            def measured(value):
                return value if s.measured else None
            out.append({
                "checker": name, "version": s.checker, "measured": s.measured,
                "detection": measured(s.detection), "low": measured(s.interval[1]),
                "high": measured(s.interval[2]), "detected": measured(s.report.overall.detected),
                "witnessed": s.report.overall.total,
                "selection": measured(s.rate_on(m for m in sel if m in pool)),
                "heldout": measured(s.rate_on(m for m in held if m in pool)),
                "false_rejects": fr, "kernels_checked": s.kernels_checked,
                "median_inputs": float(np.median(counts)) if counts else math.nan,
                "max_inputs": max(counts) if counts else 0,
                "missing_inputs": sum(len(v) for v in s.missing_inputs.values()),
                "exact": s.exact,
            })
        return out


def scored_inputs(checkers: Iterable[CheckerVersion], problems: Iterable[str],
                  also: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    """problem -> the input ids of every checker in `checkers` (and of `also`: field faults'
    witnesses), the extra candidates `harden` gives the kill matrix so that each checker is scored
    on its own inputs: a preset's seeds and generators are not the matrix's (KernelBench's five
    U[0, 1) seeds, SOL-ExecBench's identity-affine draws at the official shape).

    >>> from mutagym.rewards.checker import load_checker
    >>> scored_inputs([load_checker("kernelbench")], ["relu"])["relu"][-1]
    'relu:uniform01:official:4'
    """
    checkers = list(checkers)
    out = {p: list(ids) for p, ids in (also or {}).items()}
    for p in problems:
        out[p] = list(dict.fromkeys([*out.get(p, ()), *(i for c in checkers for i in c.input_ids_for(p))]))
    return out


def harden(problems: Sequence[str] | None = None, out: str | os.PathLike = "harden", *,
           budget: int = 2, quick: bool = False, presets: Sequence[str] | None = None,
           shape_classes: Sequence[str] | None = None, generators: Sequence[str] | None = None, seeds: Sequence[int] = (0,),
           schedules: Sequence[str] = ("ascending", "descending"), num_cpus: int | None = None,
           address: str | None = None, checkers: Sequence[str] | None = None,
           check_false_rejects: bool = True, report: bool = True, progress: bool = True,
           backend: str = "cpu", workers: int = 2,
           field_sets: Sequence[str | os.PathLike] = ()) -> HardenSummary:
    """The whole job: mutate -> kill matrix -> score the presets -> select suites -> the hardened
    checker (saved under `<out>/checkers/`) -> `report.md` with plots.

    `quick` (when `problems` / `presets` are not given) is relu, softmax, layernorm at the
    official and remainder shapes. `shape_classes` as `KillMatrixSettings.shape_classes` (default:
    the cheap classes unless `presets` names the shapes). Every stage resumes from what `out`
    already holds. `field_sets` are field-fault sets (`mutants.field`): their wrong kernels of
    `problems` join the kill matrix as population `field`, their witnesses its inputs, and their
    correct kernels the false-reject checks (a tightened tolerance that rejects one is undone too).
    Every scored checker's own inputs join the matrix's candidates (`scored_inputs`), whatever
    `generators`, `presets` and `seeds` say, so each is scored on all of its inputs.
    """
    start = time.monotonic()
    out = Path(out)
    problems = list(problems) if problems else (list(QUICK_PROBLEMS) if quick else list_problems())
    if presets is None and quick:
        presets = QUICK_PRESETS
    compared = [load_checker(name) for name in (checkers or list_checkers())]
    faults = load_field_faults(field_sets, problems) if field_sets else None
    runs = CorrectRuns(backend=backend)         # each correct kernel runs once per input, for every checker
    with ThreadPoolExecutor(1) as background:
        # the presets' inputs do not depend on the kill matrix: run the correct kernels on them
        # while the pool builds and Ray starts (cores the matrix does not use yet)
        presets_run = background.submit(runs.prepare, compared, problems) if check_false_rejects else None
        built = build_pool(out / "pool", problems, workers=workers, progress=progress)
        stages = {"mutant pool": time.monotonic() - start}
        mutants = load_mutants(problems, str(built.path)) + (faults.records if faults else [])
        settings = KillMatrixSettings(out=str(out / "killmatrix"), presets=tuple(presets) if presets else None,
                                      shape_classes=tuple(shape_classes) if shape_classes is not None else None,
                                      generators=tuple(generators) if generators else None,
                                      seeds=tuple(seeds), schedules=tuple(schedules), backend=backend,
                                      num_cpus=num_cpus, address=address, progress=progress)
        extra = scored_inputs(compared, problems, faults.witnesses if faults else {})
        km = load_killmatrix(run_killmatrix(mutants, settings, extra))
        stages["kill matrix"] = time.monotonic() - start - sum(stages.values())
        if presets_run is not None:
            presets_run.result()
            stages["preset false-reject runs left after the matrix"] = time.monotonic() - start - sum(stages.values())
    problems = [p for p in problems if p in km.problems]
    run_settings = {"budget": budget, "quick": quick, "presets": list(presets) if presets else None,
                    "shape_classes": list(shape_classes) if shape_classes is not None else None,
                    "generators": list(generators) if generators else None, "seeds": list(seeds),
                    "schedules": list(schedules), "backend": backend}
    if faults:
        run_settings["field_sets"] = list(faults.sets)
    result = harden_checker(km, problems=problems, budget=budget, settings=run_settings)
    restored: list[str] = []
    if check_false_rejects:
        rejects, _ = runs.false_rejects(result.checker, problems)
        if faults:
            rejects += field_false_rejects(result.checker, faults.correct, backend=backend)
        restored = sorted({r.problem for r in rejects if result.problems[r.problem].tol is not None})
        if restored:                 # a tightened tolerance rejected a correct kernel: undo it
            for p in restored:
                result.problems[p].tol = None
                result.problems[p].note = "tightened tolerance rejected a correct kernel: default restored"
            suites = dict(result.checker.suites)
            result = _assemble(km, result.problems, suites, budget, "heldout", True, "hardened",
                               run_settings, None)
    checker_path = result.checker.save(out / "checkers")
    scores = {c.name: score_checker(c, km, problems=problems, check_false_rejects=check_false_rejects,
                                    backend=backend, runs=runs)
              for c in compared + [result.checker]}
    field_rejects = None
    if faults and check_false_rejects:
        from ..rewards.report import GATE_ROW
        field_rejects = {c.name: field_false_rejects(c, faults.correct, backend=backend)
                         for c in compared + [result.checker]}
        field_rejects[GATE_ROW] = gate_false_rejects(result.checker, km, faults.correct, backend=backend)
    stages["suites, false rejects, scores"] = time.monotonic() - start - sum(stages.values())
    summary = HardenSummary(out, problems, km.out, result, checker_path, scores, None,
                            0.0, restored, stages, faults, field_rejects)
    if report:
        from ..rewards.report import write_report
        summary.report = write_report(summary, km)
        stages["report"] = time.monotonic() - start - sum(stages.values())
    summary.seconds = time.monotonic() - start
    return summary
