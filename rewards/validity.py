"""The validity gate: an input may judge kernels only if every correct kernel passes it.

Each candidate input runs through the substrate and every variant of its problem (one compile per
kernel, one batch over all candidates, run under each schedule) and is compared with the fp64
reference under a comparator (once per kernel where a later schedule's outputs are bitwise the
same). The input is *valid for that comparator* only if every kernel passes every output in every
schedule; an invalid input keeps its reason (which kernel, which output or which run outcome, and
the comparator's message). For each input the legitimate error is recorded: the largest absolute
and relative error of the correct kernels and the worst fraction of the tolerance budget
`|out - ref| / (atol + rtol |ref|)` they used.

The validity ceiling of a problem is how far a sign-mixed input can be scaled (1, 3, 10, 30, ...)
before a correct fp32 kernel fails: the paper's x300 on a K = 4096 reduction is one such ceiling.

>>> from mutagym.substrates.catalog import load_problem
>>> from mutagym.rewards.generators import generate
>>> p = load_problem("relu")
>>> [v] = check_validity(p, [generate(p, "sign_mixed", preset="tiny")])
>>> v.valid, v.reason, v.max_abs
(True, '', 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..runtime import RunCase, SubmissionError, compile
from ..substrates.catalog import Problem
from .comparator import Comparator, identical
from .generators import GeneratedInput, generate, scale_inputs

__all__ = ["CEILING_SCALES", "CeilingReport", "InputValidity", "check_validity", "comparator_for",
           "tolerance_used", "validity_ceiling"]

#: The scales the validity ceiling tries, in order (1, 3, 10, 30, ... 1e12).
CEILING_SCALES: tuple[float, ...] = tuple(m * 10.0 ** e for e in range(13) for m in (1, 3))[:-1]


def comparator_for(problem: Problem) -> Comparator:
    """The problem's own tolerance as a `Comparator`."""
    t = problem.spec.tolerance
    return Comparator(atol=t.atol, rtol=t.rtol, matched_ratio=t.matched_ratio)


def tolerance_used(out: np.ndarray, ref: np.ndarray, comparator: Comparator) -> float:
    """The worst `|out - ref| / (atol + rtol |ref|)` over elements where `ref` is finite.

    >>> round(tolerance_used(np.array([1.0, 2.005]), np.array([1.0, 2.0]), Comparator(1e-2, 0.0)), 6)
    0.5
    """
    o = np.asarray(out, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if o.size == 0:
        return 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        used = np.abs(np.subtract(o, r))
        budget = np.multiply(np.abs(r), comparator.rtol)
        np.add(budget, comparator.atol, out=budget)
        np.divide(used, np.maximum(budget, np.finfo(np.float64).tiny, out=budget), out=used)
    worst = used.max()
    if np.isfinite(worst):       # every element finite (the common case): no mask needed
        return float(worst)
    finite = np.isfinite(r) & np.isfinite(o)
    return float(used[finite].max()) if finite.any() else 0.0


@dataclass
class InputValidity:
    """The gate's verdict on one input: `valid`, the first `reason` it is not, the legitimate error.

    `max_abs`, `max_rel` and `tolerance_used` are the worst over every correct kernel, output and
    schedule that ran to completion; `failures` lists every (kernel, schedule, output, message)
    that failed, `reason` is the first of them as one line.
    """

    input: GeneratedInput
    valid: bool = True
    reason: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    tolerance_used: float = 0.0
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.input.id

    def _fail(self, kernel: str, schedule: str, output: str, message: str) -> None:
        self.failures.append((kernel, schedule, output, message))
        if self.valid:
            self.valid = False
            where = f"output {output!r}" if output else "run"
            self.reason = f"kernel {kernel!r} ({schedule}) {where}: {message}"


def check_validity(problem: Problem, inputs: Sequence[GeneratedInput], comparator: Comparator | None = None,
                   *, backend: str = "cpu", schedules: Sequence[str] = ("ascending",),
                   timeout_s: float = 30.0, references: Sequence[dict] | None = None) -> list[InputValidity]:
    """The validity of each of `inputs` for `comparator` (default: the problem's tolerance).

    Every correct kernel of `problem` is compiled once and runs all inputs in one batch under
    each schedule. A correct kernel that does not build raises `SubmissionError` naming it (the
    catalog is broken; no input can be judged). `references` may pass precomputed fp64 outputs.
    """
    comparator = comparator or comparator_for(problem)
    inputs = list(inputs)
    scalars = problem.scalar_values()
    if references is None:
        references = [problem.reference_outputs(g.inputs, scalars) for g in inputs]
    verdicts = [InputValidity(g) for g in inputs]
    if not inputs:
        return verdicts
    cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, scalars) for g in inputs]
    for name, source in problem.kernel_sources().items():
        try:
            kernel = compile(source, backend=backend)
        except SubmissionError as err:
            raise SubmissionError(f"problem {problem.id!r}: correct kernel {name!r} does not build: "
                                  f"{err}") from err
        first: dict[int, tuple[dict, list]] = {}   # case -> outputs and failures of its first schedule
        for schedule, results in kernel.run_schedules(cases, schedules, timeout_s=timeout_s).items():
            for i, (verdict, ref, result) in enumerate(zip(verdicts, references, results)):
                if not result.ok:
                    verdict._fail(name, schedule, "", f"{result.outcome}: {result.message}")
                elif i in first and identical(first[i][0], result.outputs):
                    for out_name, message in first[i][1]:     # the maxima cannot change
                        verdict._fail(name, schedule, out_name, message)
                else:
                    first.setdefault(i, (result.outputs, _judge(verdict, name, schedule, ref, result.outputs,
                                                               comparator)))
    return verdicts


def _judge(verdict: InputValidity, kernel: str, schedule: str, refs: dict, outputs: dict,
           comparator: Comparator) -> list[tuple[str, str]]:
    """Compare each output, record failures and legitimate error in `verdict`; the failures."""
    failed = []
    for out_name, expected in refs.items():
        out = outputs[out_name]
        cmp = comparator.compare(out, expected)
        if not cmp.passed:
            verdict._fail(kernel, schedule, out_name, cmp.message)
            failed.append((out_name, cmp.message))
            continue
        verdict.max_abs = max(verdict.max_abs, cmp.max_abs)
        verdict.max_rel = max(verdict.max_rel, cmp.max_rel)
        verdict.tolerance_used = max(verdict.tolerance_used, tolerance_used(out, expected, comparator))
    return failed


@dataclass
class CeilingReport:
    """How far a sign-mixed input of `problem` at `preset` scales before a correct kernel fails.

    `largest_valid_scale` is the last scale every correct kernel passed (None if even x1 fails);
    `first_invalid_scale` the first that failed (None if none did up to the largest tried), with
    the gate's `reason`. `scales` lists `(scale, valid, tolerance_used)` for every scale tried.
    """

    problem: str
    preset: str
    seed: int
    largest_valid_scale: float | None
    first_invalid_scale: float | None
    reason: str
    scales: list[tuple[float, bool, float]]


def validity_ceiling(problem: Problem, *, preset: str | None = None, seed: int = 0,
                     scales: Sequence[float] = CEILING_SCALES, comparator: Comparator | None = None,
                     backend: str = "cpu", timeout_s: float = 30.0) -> CeilingReport:
    """Scale a `sign_mixed` input by each of `scales` until a correct kernel fails.

    `preset` defaults to `large_reduction` where the problem has it (the ceiling is lowest on long
    reductions), else `official`. All scales run in one batch per kernel.

    >>> from mutagym.substrates.catalog import load_problem
    >>> r = validity_ceiling(load_problem("relu"), preset="tiny", scales=(1, 1000))
    >>> r.largest_valid_scale, r.first_invalid_scale
    (1000, None)
    """
    if preset is None:
        preset = "large_reduction" if "large_reduction" in problem.preset_names else "official"
    base = generate(problem, "sign_mixed", preset=preset, seed=seed)
    candidates = [scale_inputs(problem, base, s) for s in scales]
    verdicts = check_validity(problem, candidates, comparator, backend=backend, timeout_s=timeout_s)
    largest, first, reason = None, None, ""
    for scale, v in zip(scales, verdicts):
        if not v.valid:
            first, reason = scale, v.reason
            break
        largest = scale
    return CeilingReport(problem.id, preset, seed, largest, first, reason,
                         [(s, v.valid, v.tolerance_used) for s, v in zip(scales, verdicts)])
