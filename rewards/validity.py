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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..runtime import RunCase, SubmissionError, compile
from ..runtime.buffers import numpy_dtype
from ..substrates.catalog import Problem
from .comparator import Comparator
from .envelope import InputEnvelope
from .generators import GeneratedInput, generate, scale_inputs
from .input_cache import InputCache
from .judging import CaseJudgement, comparator_for, judge_cases, shared_cache

__all__ = ["CEILING_SCALES", "CeilingReport", "InputValidity", "check_validity", "validity_ceiling"]

#: The scales the validity ceiling tries, in order (1, 3, 10, 30, ... 1e12).
CEILING_SCALES: tuple[float, ...] = tuple(m * 10.0 ** e for e in range(13) for m in (1, 3))[:-1]


@dataclass
class InputValidity:
    """The gate's verdict on one input: `valid`, the first `reason` it is not, the legitimate error.

    `max_abs`, `max_rel` and `tolerance_used` are the worst over every correct kernel, output and
    schedule that ran to completion, `used` the worst `tolerance_used` per output (the input's
    envelope, `envelope`), `seconds` the longest run where the backend measures it; `failures`
    lists every (kernel, schedule, output, message) that failed, `reason` is the first of them as
    one line.
    """

    input: GeneratedInput
    valid: bool = True
    reason: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    tolerance_used: float = 0.0
    used: dict[str, float] = field(default_factory=dict)
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)
    seconds: float | None = None

    @property
    def id(self) -> str:
        return self.input.id

    def record(self, kernel: str, case: CaseJudgement) -> None:
        """Take one correct kernel's judgement of this input under one order."""
        if case.seconds is not None:
            self.seconds = max(self.seconds or 0.0, case.seconds)
        if not case.outputs:
            self._fail(kernel, case.schedule, "", case.message)
        for out in case.outputs:
            if not out.passed:
                self._fail(kernel, case.schedule, out.name, out.message)
                continue
            self.max_abs = max(self.max_abs, out.max_abs)
            self.max_rel = max(self.max_rel, out.max_rel)
            self.tolerance_used = max(self.tolerance_used, out.tolerance_used or 0.0)
            self.used[out.name] = max(self.used.get(out.name, 0.0), out.tolerance_used or 0.0)

    def envelope(self, problem: Problem, comparator: Comparator, references: Mapping[str, Any]) -> InputEnvelope:
        """The legitimate error on this input as an envelope, at `comparator`'s tolerance (the one
        this validity was checked with): the worst of the correct kernels and of the problem's
        reference run in float32 (`Problem.reference_outputs(precision="float32")`), a plain
        float32 implementation whose error covers what fp64-accumulating variants do not show.
        `references` are the input's fp64 outputs."""
        used = dict(self.used)
        try:
            plain = problem.reference_outputs(self.input.inputs, problem.scalar_values(), dims=self.input.dims,
                                              precision="float32")
        except Exception:  # noqa: BLE001 - a reference that cannot run in float32: the kernels alone
            plain = {}
        dtypes = {t.name: t.dtype for t in problem.spec.outputs}
        for name, out in plain.items():
            if name in used and np.issubdtype(out.dtype, np.floating):
                rounded = out.astype(numpy_dtype(dtypes[name]))   # what a kernel would store
                share = comparator.tolerance_used(rounded, references[name])
                if comparator.compare(rounded, references[name]).passed:
                    used[name] = max(used[name], share)
        return InputEnvelope(comparator.atol, comparator.rtol, used, self.seconds)

    def _fail(self, kernel: str, schedule: str, output: str, message: str) -> None:
        self.failures.append((kernel, schedule, output, message))
        if self.valid:
            self.valid = False
            where = f"output {output!r}" if output else "run"
            self.reason = f"kernel {kernel!r} ({schedule}) {where}: {message}"


def check_validity(problem: Problem, inputs: Sequence[GeneratedInput], comparator: Comparator | None = None,
                   *, backend: str = "cpu", schedules: Sequence[str] = ("ascending",),
                   timeout_s: float = 30.0, references: Sequence[dict] | None = None,
                   cache: InputCache | None = None, kernels: Mapping[str, Any] | None = None
                   ) -> list[InputValidity]:
    """The validity of each of `inputs` for `comparator` (default: the problem's tolerance).

    Every correct kernel of `problem` is compiled once and runs all inputs in one batch under
    each schedule (`judging.judge_cases`). A correct kernel that does not build raises
    `SubmissionError` naming it (the catalog is broken; no input can be judged). `references` may
    pass precomputed fp64 outputs, else they come from `cache` (default: the shared one); `kernels`
    may pass the correct kernels already built (name -> kernel), as verification does.
    """
    comparator = comparator or comparator_for(problem)
    inputs = list(inputs)
    verdicts = [InputValidity(g) for g in inputs]
    if not inputs:
        return verdicts
    store = cache if cache is not None else shared_cache()
    references = list(references) if references is not None else [store.reference(problem, g) for g in inputs]
    scalars = problem.scalar_values()
    cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, scalars) for g in inputs]
    ids = [g.id for g in inputs]
    for name, kernel in (kernels.items() if kernels is not None else _built(problem, backend)):
        judged = judge_cases(kernel, ids, cases, references, comparator, schedules, timeout_s=timeout_s,
                             measure=True)
        for cases_judged in judged.values():
            for verdict, case in zip(verdicts, cases_judged):
                verdict.record(name, case)
    return verdicts


def _built(problem: Problem, backend: str):
    """(name, kernel) of every correct kernel of `problem`; one that does not build is the catalog's bug."""
    for name, source in problem.kernel_sources().items():
        try:
            yield name, compile(source, backend=backend)
        except SubmissionError as err:
            raise SubmissionError(f"problem {problem.id!r}: correct kernel {name!r} does not build: "
                                  f"{err}") from err


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
