"""The falsification search: look for the input on which a given kernel is worst.

Fixed inputs, however many, catch only what their recipes reach; a policy is an optimiser that
finds what no list names. So after a kernel passes the gate's fixed stages, a bounded search
tries to make it fail: it starts from the inputs where its error came closest to what the input
allows (its envelope, `rewards.envelope`), and composes moves on them (`rewards.moves`: magnitudes
across the exponent range, offsets, signs, one outlier at the first, middle or last position of
each row, constant and coarse rows, special values) and shape moves (any dim toward its
declared minimum or maximum, or a size drawn log-uniformly in its range, within `max_elements`),
keeping the candidates that raise the kernel's error relative to the envelope. The same
searches have caught floating-point error in the S3FP line of work; here the yardstick is the
correct kernels, not an a-priori error bound.

Every round runs its candidates through the kernel and the substrate in ascending order; the
substrate's error stands in for the envelope while the search climbs. A candidate that the
kernel fails (or exceeds the substrate's envelope on) becomes a suspect, and a suspect rejects
only after the validity gate has passed it (every correct kernel, every order of the gate, which
also measures its real envelope) and the kernel fails it there in some order, clearly: at
`CLEAR_FAILURE` times the flat tolerance too, or with a fault (its envelope, calibrated on the
pool's inputs, is no yardstick at the search's extremes). So the
search never rejects a kernel on an input a correct kernel fails, nor for a near miss on an
extreme input where correct kernels of other summation orders land just past the tolerance.

The search is deterministic given its `seed` (the gate derives it from its secret and the text)
and the kernel: proposals depend only on the seed and on outputs. `seconds` is a safety cap, not a
budget: a search cut by it says so (`SearchReport.cut`), and a kernel is never rejected for it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..runtime import RunCase, compile
from ..substrates.catalog import Problem, load_problem
from .checker import CheckerVersion, InputRef, Verdict, evaluate_kernel
from .comparator import Comparator
from .envelope import EnvelopeRule, EnvelopeSet, InputEnvelope
from .generators import FREE_ROLES, dims_preset
from .input_cache import InputCache
from .judging import comparator_for, judge_cases, judge_kernel, shared_cache
from .moves import moves_for, split_moves
from .shapes import log_uniform, cost, toward
from .validity import check_validity

__all__ = ["SearchBudget", "SearchPlan", "SearchReport", "falsify", "search_source"]

#: Moves an input may carry; deeper compositions rarely add a regime the last three did not.
MAX_DEPTH = 3
#: The share of proposals that move a shape rather than values.
SHAPE_SHARE = 0.3
#: A suspect rejects only a clear failure: the kernel fails it at this multiple of the flat
#: tolerance too, or with a fault. The search seeks extremes, where correct kernels of other
#: summation orders land just past the tolerance (a three-launch scan: 1.18 % on a 1 % budget,
#: thousands of times the catalog kernels' error there, so past the envelope too) on inputs the
#: catalog's kernels pass.
CLEAR_FAILURE = 4.0


@dataclass(frozen=True)
class SearchBudget:
    """What one search may spend: first a sweep, every value move once on the start closest to
    failing, shrunk to at most `sweep_elements` in its largest tensor (0: no sweep); then
    `candidates` inputs in `rounds` rounds (each run once by the kernel and the substrate),
    climbing from the best `parents`, with at most `max_elements` in any candidate's largest
    tensor; at most `suspects` go through the full validity gate. `seconds` only caps a search on
    a machine far slower than measured (never a reason to reject)."""

    candidates: int = 24
    rounds: int = 3
    parents: int = 3
    max_elements: int = 1 << 17
    suspects: int = 2
    seconds: float = 60.0
    sweep_elements: int = 1 << 12

    def as_dict(self) -> dict:
        return {"candidates": self.candidates, "rounds": self.rounds, "parents": self.parents,
                "max_elements": self.max_elements, "suspects": self.suspects, "seconds": self.seconds,
                "sweep_elements": self.sweep_elements}


@dataclass
class SearchReport:
    """What a search did: candidates tried, suspects gated, the best share of the envelope seen
    (and on which input), and whether the time cap cut it."""

    tried: int = 0
    gated: int = 0
    best: tuple[float, str] = (0.0, "")
    cut: bool = False
    witness: str | None = None
    log: list[str] = field(default_factory=list)


def _propose(problem: Problem, parent: InputRef, dims: dict, rng: np.random.Generator,
             max_elements: int) -> InputRef | None:
    """One candidate: `parent` with one more value move, or with one dim moved."""
    _, moves = split_moves(parent.generator)
    if rng.random() < SHAPE_SHARE or len(moves) >= MAX_DEPTH:
        name = list(problem.dims)[int(rng.integers(len(problem.dims)))]
        d = problem.dims[name]
        size = (d.min, d.max, log_uniform(rng, d.min, d.max))[int(rng.integers(3))]
        moved = toward(problem, dims, name, size, max_elements)
        return None if moved is None or moved == dims else InputRef(
            generator=parent.generator, preset=dims_preset(moved), seed=parent.seed)
    allowed = list(moves_for(problem))
    move = allowed[int(rng.integers(len(allowed)))]
    return InputRef(generator=f"{parent.generator}~{move}", preset=parent.preset, seed=parent.seed)


def _shrunk(problem: Problem, dims: dict, max_elements: int) -> dict | None:
    """`dims` with the largest dim above its minimum halved until the largest tensor holds at most
    `max_elements`: the parent's proportions kept, so a move drawn per row meets many rows."""
    dims = dict(dims)
    while cost(problem, dims).elements > max_elements:
        shrinkable = [n for n in dims if dims[n] > problem.dims[n].min]
        if not shrinkable:
            return None
        name = max(shrinkable, key=lambda n: dims[n])
        dims[name] = max(problem.dims[name].min, dims[name] // 2)
    return dims


#: The sign regimes every arrangement move of the sweep is also tried on: all positive, all negative.
SWEEP_SIGNS = ("magnitude", "magnitude~negate")


def _sweep(problem: Problem, parent: InputRef, dims: dict, max_elements: int) -> list[InputRef]:
    """Every value move once on `parent`, shrunk to `max_elements`, then every arrangement move
    (outliers, zeros, ties, special values) on rows of one sign: each regime of the value domain
    tried before any climb, where a random composition would reach one only by luck (a zero is a
    row's minimum only among non-negative values)."""
    small = _shrunk(problem, dims, max_elements)
    if small is None:
        return []
    preset = dims_preset(small) if small != dims else parent.preset
    allowed = moves_for(problem)
    arranging = [name for name, m in allowed.items() if not m.regime and set(m.roles) & set(FREE_ROLES)]
    chains = list(allowed) + [f"{sign}~{name}" for sign in SWEEP_SIGNS for name in arranging]
    return [InputRef(generator=f"{parent.generator}~{chain}", preset=preset, seed=parent.seed) for chain in chains]


def falsify(checker: CheckerVersion, problem: Problem, kernel, substrate, starts: Sequence[InputRef], *,
            seed: int, schedules: Sequence[str], rule: EnvelopeRule, budget: SearchBudget,
            cache: InputCache, backend: str = "cpu", timeout_s: float = 30.0) -> tuple[dict[str, Verdict], SearchReport]:
    """Search for an input `kernel` fails; (the verdicts by order, the report).

    The verdicts are those of the witness in every order of `schedules` (one rejects) when the
    search found one, else an accepting verdict per order. `checker` gives the comparator (the
    problem's tolerance), `substrate` is the problem's correct kernel built, `starts` the inputs
    the climb begins from (those costlier than the budget's `max_elements` are shrunk first)."""
    started = time.monotonic()
    rng = np.random.default_rng(seed)
    comparator = comparator_for(problem)
    report = SearchReport()
    parents: list[tuple[float, InputRef, dict]] = []
    for ref in starts:
        g, _ = cache.get(problem, ref)
        dims = g.dims
        if cost(problem, dims).elements > budget.max_elements:
            main = max(dims, key=lambda n: dims[n])
            dims = toward(problem, dims, main, dims[main], budget.max_elements)
            if dims is None:
                continue
            ref = InputRef(generator=ref.generator, preset=dims_preset(dims), seed=ref.seed)
        parents.append((0.0, ref, dict(dims)))
    seen = {r.id_for(problem) for _, r, _ in parents}
    suspects: list[tuple[float, InputRef]] = []
    per_round = budget.candidates // max(1, budget.rounds)
    swept = _sweep(problem, parents[0][1], parents[0][2], budget.sweep_elements) if parents and budget.sweep_elements else []
    for turn in range(budget.rounds + 1):
        if time.monotonic() - started > budget.seconds:
            report.cut = True
            break
        drawn = iter(swept) if turn == 0 else (
            _propose(problem, parent, dims, rng, budget.max_elements)
            for _, parent, dims in (parents[int(rng.integers(len(parents)))]
                                    for _ in range(per_round * 3 if parents else 0)))   # proposals may repeat
        proposals = []
        for ref in drawn:
            if turn > 0 and len(proposals) == per_round:
                break
            if ref is None or ref.id_for(problem) in seen:
                continue
            seen.add(ref.id_for(problem))
            try:
                made = cache.get(problem, ref)
            except (ValueError, KeyError, FloatingPointError):   # a move or dims the problem cannot take
                continue
            proposals.append((ref, made))
        if not proposals:
            continue
        report.tried += len(proposals)
        ids = [g.id for _, (g, _) in proposals]
        cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, problem.scalar_values())
                 for _, (g, _) in proposals]
        references = [refs for _, (_, refs) in proposals]
        correct = judge_cases(substrate, ids, cases, references, comparator, ("ascending",), timeout_s=timeout_s,
                              measure=True)["ascending"]
        proxies = [(rule, InputEnvelope(comparator.atol, comparator.rtol, {o.name: o.tolerance_used or 0.0
                                                                            for o in c.outputs}))
                   if c.passed else None for c in correct]
        judged = judge_cases(kernel, ids, cases, references, comparator, ("ascending",), timeout_s=timeout_s,
                             envelopes=proxies)["ascending"]
        scored = []
        for (ref, (g, _)), c, j, proxy in zip(proposals, correct, judged, proxies):
            if proxy is None:             # the substrate itself fails it: not an input that may judge
                continue
            share = float("inf") if not j.passed else (j.envelope_used or 0.0)
            scored.append((share, ref, dict(g.dims)))
            if share > report.best[0] or not report.best[1]:
                report.best = (share, ref.id_for(problem))
            if not j.passed:
                suspects.append((share, ref))
        found = _confirm(checker, problem, kernel, sorted(suspects, key=lambda s: (-s[0], s[1].id_for(problem))),
                         schedules, rule, budget, cache, backend, timeout_s, report)
        suspects = []
        if found is not None:
            return found, report
        parents = sorted(parents + scored, key=lambda p: (-p[0], p[1].id_for(problem)))[:budget.parents]
    accepted = Verdict(True, "ok", checker.version_id, problem.id, [])
    return {s: accepted for s in schedules}, report


def _confirm(checker: CheckerVersion, problem: Problem, kernel, suspects: list[tuple[float, InputRef]],
             schedules: Sequence[str], rule: EnvelopeRule, budget: SearchBudget, cache: InputCache,
             backend: str, timeout_s: float, report: SearchReport) -> dict[str, Verdict] | None:
    """The verdicts of the first suspect that passes the validity gate in every order and that
    the kernel fails there, judged against its measured envelope; None when no suspect does."""
    comparator = comparator_for(problem)
    for _, ref in suspects:
        if report.gated >= budget.suspects:
            return None
        report.gated += 1
        g, refs = cache.get(problem, ref)
        twin = _ordinary_twin(problem, ref)
        checked = [(g, refs)] + ([cache.get(problem, twin)] if twin is not None else [])
        validity, *ordinary = check_validity(problem, [c[0] for c in checked], comparator, backend=backend,
                                             schedules=schedules, references=[c[1] for c in checked],
                                             timeout_s=timeout_s)
        if not validity.valid:
            report.log.append(f"{g.id}: not valid ({validity.reason})")
            continue
        if ordinary and not ordinary[0].valid:
            report.log.append(f"{g.id}: its values fail a correct kernel at the official shape ({ordinary[0].reason})")
            continue
        envelope = validity.envelope(problem, comparator, refs)
        verdicts = evaluate_kernel(checker, problem, kernel, [ref], schedules, timeout_s=timeout_s,
                                   cache=cache, envelopes=EnvelopeSet(rule, {g.id: envelope}))
        failed = [s for s in schedules if not verdicts[s].accepted]
        if not failed:
            continue
        loose = Comparator(atol=comparator.atol * CLEAR_FAILURE, rtol=comparator.rtol * CLEAR_FAILURE,
                           matched_ratio=comparator.matched_ratio, nan_matches=comparator.nan_matches)
        [again] = judge_kernel(kernel, problem, [g], loose, failed[:1], timeout_s=timeout_s,
                               references=[refs])[failed[0]]
        if again.passed:
            report.log.append(f"{g.id}: failed only within {CLEAR_FAILURE:g}x the tolerance (not a clear failure)")
            continue
        report.witness = g.id
        return verdicts
    return None


def _ordinary_twin(problem: Problem, ref: InputRef) -> InputRef | None:
    """`ref`'s values at the problem's official shape, when it has moves and another shape: a
    suspect is fair only where its regime of values is one the correct kernels compute at an
    ordinary shape too. A row of one element at 1e38 passes every two-pass normaliser only
    because its deviations are exactly zero, while a Welford merge squares it and
    overflows; at the official shape the same values overflow the two-pass kernel as well, so
    the regime is outside what float32 normalisers compute and the suspect does not judge."""
    if "~" not in ref.generator or ref.preset == "official":
        return None
    return InputRef(generator=ref.generator, preset="official", seed=ref.seed)


@dataclass(frozen=True)
class SearchPlan:
    """One kernel's search as the gate asks for it: its `seed` and `budget`."""

    seed: int
    budget: SearchBudget = SearchBudget()


def search_source(checker: CheckerVersion, problem: str | Problem, source: str, starts: Sequence[InputRef],
                  plan: SearchPlan, *, schedules: Sequence[str], rule: EnvelopeRule, backend: str = "cpu",
                  cache: InputCache | None = None, timeout_s: float = 30.0) -> dict[str, Verdict]:
    """`falsify` a submission's text (built here, as every stage builds it; its substrate too):
    the verdicts by order."""
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    cache = cache if cache is not None else shared_cache()
    kernel = compile(source, backend=backend)
    substrate = compile(problem.kernel_sources()["substrate"], backend=backend)
    verdicts, _ = falsify(checker, problem, kernel, substrate, starts, seed=plan.seed, schedules=schedules,
                          rule=rule, budget=plan.budget, cache=cache, backend=backend, timeout_s=timeout_s)
    return verdicts
