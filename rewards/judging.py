"""The judging core: build a kernel, run it on inputs under thread orders, compare with fp64.

Every path that runs a kernel and compares it with the reference goes through here: the checker
(and so the reward gate and the prescreen workers), the validity gate, catalog verification,
correct-kernel scoring, the kill matrix and `mutagym run`. They share one outcome vocabulary:

| outcome | whose fault | meaning |
| --- | --- | --- |
| `ok` | - | the run finished and every output is within tolerance |
| `wrong` | kernel | the run finished and an output is outside tolerance (or missing) |
| `source_error` | kernel | the text is not a valid submission (format, forbidden construct) |
| `compile_error` | kernel | the compiler refused the source |
| `launch_error` | kernel | the launch plan is refused for this input (zero grid, too many threads) |
| `memory_fault`, `sync_error`, `timeout`, `crash`, `forbidden_syscall` | kernel | how the run ended |
| `data_race` | kernel | two threads' accesses to one element conflict with nothing ordering them |
| `stateful_kernel` | kernel | a launch read `__device__` data that an earlier launch changed |

mutagym's own failures (a toolchain missing, a worker lost) are never an outcome: they raise
`InfrastructureError`, and the reward paths turn that into `infra_error`, the only result that
says nothing about the kernel (trainers get None for it; every kernel fault is penalised).

References come from one place, `InputCache` (keyed by input id, bounded, LRU): a caller passes
its own long-lived cache, or gets the process's `shared_cache()`.

>>> from mutagym.substrates.catalog import load_problem
>>> from mutagym.rewards.checker import InputRef
>>> p = load_problem("relu")
>>> [g] = [shared_cache().get(p, InputRef(generator="sign_mixed", preset="tiny"))[0]]
>>> from mutagym.runtime import compile
>>> kernel = compile(p.kernel_sources()["substrate"], backend="cpu")
>>> [case] = judge_kernel(kernel, p, [g], comparator_for(p))["ascending"]
>>> case.outcome, case.max_abs
('ok', 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..runtime import RunCase, SubmissionError
from ..runtime.errors import CompileError, LaunchError
from ..substrates.catalog import Problem
from .comparator import Comparator, Reference, identical
from .envelope import EnvelopeRule, InputEnvelope
from .generators import GeneratedInput
from .input_cache import InputCache

__all__ = ["BUILD_FAULTS", "CaseJudgement", "INFRA_ERROR", "KERNEL_FAULTS", "OK", "OUTCOMES",
           "OutputJudgement", "RUN_FAULTS", "WRONG", "build_fault", "comparator_for",
           "JudgedOutputs", "judge_cases", "judge_kernel", "judge_outputs", "judge_result", "shared_cache", "tolerance_used"]

OK, WRONG = "ok", "wrong"
#: A submission that never ran: it depends on no input.
BUILD_FAULTS = ("source_error", "compile_error")
#: How a run that did not finish ended (`launch_error`: the runtime refused its launch plan).
RUN_FAULTS = ("launch_error", "memory_fault", "sync_error", "data_race", "stateful_kernel", "timeout", "crash",
              "forbidden_syscall")
KERNEL_FAULTS = (WRONG, *BUILD_FAULTS, *RUN_FAULTS)
OUTCOMES = (OK, *KERNEL_FAULTS)
#: mutagym failed, not the kernel: a reward path's result, never a case's outcome.
INFRA_ERROR = "infra_error"

#: What an input is judged against beside the comparator: the rule and the input's envelope.
Envelope = tuple[EnvelopeRule, InputEnvelope]

_shared = InputCache()


def shared_cache() -> InputCache:
    """The process's input and reference cache, for callers that keep none of their own."""
    return _shared


def comparator_for(problem: Problem) -> Comparator:
    """The problem's own tolerance as a `Comparator` (what validity and verification judge by)."""
    t = problem.spec.tolerance
    return Comparator(atol=t.atol, rtol=t.rtol, matched_ratio=t.matched_ratio)


def build_fault(err: SubmissionError) -> str:
    """The outcome of a submission that did not build: `compile_error` when the compiler refused
    it, `launch_error` for a launch plan refused before any input, else `source_error`."""
    if isinstance(err, CompileError):
        return "compile_error"
    return "launch_error" if isinstance(err, LaunchError) else "source_error"


def tolerance_used(out: np.ndarray, ref: np.ndarray | Reference, comparator: Comparator) -> float:
    """The worst `|out - ref| / (atol + rtol |ref|)` over elements where `ref` is finite
    (`Comparator.tolerance_used`).

    >>> round(tolerance_used(np.array([1.0, 2.005]), np.array([1.0, 2.0]), Comparator(1e-2, 0.0)), 6)
    0.5
    """
    return comparator.tolerance_used(out, ref)


@dataclass(frozen=True)
class OutputJudgement:
    """One output against its reference. `tol_needed` (`_p99`): the smallest atol = rtol at which
    it passes with matched ratio 1 (0.99); `tolerance_used`: the share of the budget it used.
    Both only when the caller asks to `measure` (kill matrices and the validity gate do).
    `envelope_used`: the share of its envelope's allowance it used (`rewards.envelope`), when it
    was judged against one."""

    name: str
    passed: bool
    max_abs: float
    max_rel: float
    mismatch_ratio: float
    message: str = ""
    tol_needed: float | None = None
    tol_needed_p99: float | None = None
    tolerance_used: float | None = None
    envelope_used: float | None = None


@dataclass(frozen=True)
class CaseJudgement:
    """One input under one thread order: its outcome (`OUTCOMES`) and every output's judgement
    (empty when the run did not finish), and the run's `seconds` where the backend measures them.
    The statistics are the worst over the outputs."""

    input_id: str
    schedule: str
    outcome: str
    outputs: tuple[OutputJudgement, ...] = ()
    message: str = ""
    stdout: str = ""
    seconds: float | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == OK

    def _worst(self, attr: str) -> float:
        return max((getattr(o, attr) for o in self.outputs), default=math.inf)

    @property
    def max_abs(self) -> float:
        return self._worst("max_abs")

    @property
    def max_rel(self) -> float:
        return self._worst("max_rel")

    @property
    def mismatch_ratio(self) -> float:
        return max((o.mismatch_ratio for o in self.outputs), default=1.0)

    @property
    def tol_needed(self) -> float | None:
        return self._measured("tol_needed")

    @property
    def tol_needed_p99(self) -> float | None:
        return self._measured("tol_needed_p99")

    @property
    def tolerance_used(self) -> float:
        return self._measured("tolerance_used") or 0.0

    @property
    def envelope_used(self) -> float | None:
        """The largest share of an envelope's allowance any output used; None without one."""
        values = [o.envelope_used for o in self.outputs if o.envelope_used is not None]
        return max(values) if values else None

    def _measured(self, attr: str) -> float | None:
        values = [getattr(o, attr) for o in self.outputs]
        return None if not values or any(v is None for v in values) else max(values)


def judge_outputs(outputs: Mapping[str, np.ndarray], references: Mapping[str, np.ndarray | Reference],
                  comparator: Comparator, *, measure: bool = False, envelope: Envelope | None = None
                  ) -> tuple[str, tuple[OutputJudgement, ...], str]:
    """(`ok` or `wrong`, each output's judgement, the failures as one line) of finished outputs.
    With an `envelope` (rule, the input's envelope), an output the comparator passes must also
    stay within it."""
    judged, messages = [], []
    for name, expected in references.items():
        if name not in outputs:
            judged.append(OutputJudgement(name, False, math.inf, math.inf, 1.0, "missing"))
            messages.append(f"output {name!r} missing")
            continue
        out = np.asarray(outputs[name])
        if measure:
            c, (n1, n99) = comparator.measure(out, expected, (1.0, 0.99), used=True)
            extra = {"tol_needed": n1, "tol_needed_p99": n99, "tolerance_used": c.tolerance_used}
        else:
            c, extra = comparator.measure(out, expected)[0], {}
        passed, message = c.passed, c.message
        if passed and envelope is not None:
            e = envelope[0].judge(out, expected, envelope[1], name)
            passed, message, extra["envelope_used"] = e.passed, e.message, e.used
        judged.append(OutputJudgement(name, passed, c.max_abs, c.max_rel, c.mismatch_ratio, message, **extra))
        if not passed:
            messages.append(f"output {name!r}: {message}")
    return (OK if not messages else WRONG), tuple(judged), "; ".join(messages)


def judge_result(input_id: str, schedule: str, result: Any, references: Mapping[str, np.ndarray | Reference],
                 comparator: Comparator, *, measure: bool = False, envelope: Envelope | None = None) -> CaseJudgement:
    """One run judged: `result` is a `RunResult`, a plain `{name: array}` of outputs (a run that
    finished), or the message of a refused launch plan."""
    if isinstance(result, str):
        return CaseJudgement(input_id, schedule, "launch_error", (), f"launch_error: {result}")
    if isinstance(result, Mapping):
        outputs, stdout, seconds = result, "", None
    elif getattr(result, "outcome", None) is None:
        raise TypeError(f"a run must give an outputs dict or a RunResult, got {type(result).__name__}")
    elif not result.ok:
        return CaseJudgement(input_id, schedule, result.outcome, (),
                             f"{result.outcome}: {result.message}".rstrip(": "), result.stdout, result.seconds)
    else:
        outputs, stdout, seconds = result.outputs, result.stdout, result.seconds
    outcome, judged, message = judge_outputs(outputs, references, comparator, measure=measure, envelope=envelope)
    return CaseJudgement(input_id, schedule, outcome, judged, message, stdout, seconds)


def judge_kernel(kernel, problem: Problem, inputs: Sequence[GeneratedInput], comparator: Comparator,
                 schedules: Sequence[str] = ("ascending",), *, timeout_s: float = 30.0,
                 references: Sequence[Mapping[str, np.ndarray | Reference]] | None = None,
                 measure: bool = False, cache: InputCache | None = None,
                 envelopes: Sequence[Envelope | None] | None = None) -> dict[str, list[CaseJudgement]]:
    """Each of `inputs` judged under each of `schedules`: schedule -> one `CaseJudgement` per input
    (see `judge_cases`). `references` default to `cache`'s (or the shared cache's) for each input."""
    inputs = list(inputs)
    if references is None:
        store = cache if cache is not None else _shared
        references = [store.reference(problem, g) for g in inputs]
    scalars = problem.scalar_values()
    cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, scalars) for g in inputs]
    return judge_cases(kernel, [g.id for g in inputs], cases, references, comparator, schedules,
                       timeout_s=timeout_s, measure=measure, envelopes=envelopes)


def judge_cases(kernel, ids: Sequence[str], cases: Sequence[RunCase],
                references: Sequence[Mapping[str, np.ndarray | Reference]], comparator: Comparator,
                schedules: Sequence[str] = ("ascending",), *, timeout_s: float = 30.0,
                measure: bool = False, seen: "JudgedOutputs | None" = None,
                envelopes: Sequence[Envelope | None] | None = None) -> dict[str, list[CaseJudgement]]:
    """`cases` (named by `ids`) run under every schedule and judged against `references`.

    The buffers are laid out once for every schedule; a schedule whose outputs are bitwise those of
    an earlier one reuses that comparison, and so does an output bitwise one that `seen` holds for
    the same input id (a kill-matrix worker keeps one across the mutants of a problem: most mutants
    compute most inputs exactly as the substrate does). A launch plan refused for some case is that
    case's `launch_error` and the others still run. A kill-matrix worker passes prepared cases
    (read-only inputs it keeps in device memory) and prepared `Reference`s. `envelopes`, one per
    case (None for a case without one), hold each input's envelope and the rule to judge it by; a case
    whose envelope has a time runs under the rule's limit for it (`EnvelopeRule.timeout_s`)."""
    if envelopes is not None:
        cases = [_timed(case, envelope) for case, envelope in zip(cases, envelopes)]
    runs = _run(kernel, list(cases), list(schedules), timeout_s)
    out: dict[str, list[CaseJudgement]] = {}
    first = JudgedOutputs()   # each case's outputs and judgements in the orders run so far
    for schedule in schedules:
        judged = []
        for i, (input_id, result) in enumerate(zip(ids, runs[schedule])):
            if not isinstance(result, str) and result.ok:
                earlier = first.find(input_id, result.outputs) or (seen and seen.find(input_id, result.outputs))
                if earlier:
                    judged.append(replace(earlier, schedule=schedule, stdout=result.stdout, seconds=result.seconds))
                    continue
            judged.append(judge_result(input_id, schedule, result, references[i], comparator, measure=measure,
                                       envelope=envelopes[i] if envelopes is not None else None))
            if judged[-1].outputs:
                first.keep(input_id, result.outputs, judged[-1])
                if seen is not None:
                    seen.keep(input_id, result.outputs, judged[-1])
        out[schedule] = judged
    return out


def _timed(case: RunCase, envelope: Envelope | None) -> RunCase:
    """`case` with its time envelope's limit, where it has one and no limit of its own."""
    limit = envelope[0].timeout_s(envelope[1]) if envelope is not None else None
    return case if limit is None or case.timeout_s is not None else replace(case, timeout_s=limit)


class JudgedOutputs:
    """Per input id, the last few distinct outputs judged and their judgements: an output bitwise
    one of them (same names, dtypes, shapes and bytes) has the same judgement against the same
    reference and comparator, without comparing again (a compare-by-bytes costs a twentieth of a
    comparison). Whoever keeps one keeps the references and the comparator the same."""

    def __init__(self, per_input: int = 2):
        self.per_input = per_input
        self._kept: dict[str, list[tuple[Mapping[str, np.ndarray], CaseJudgement]]] = {}

    def find(self, input_id: str, outputs: Mapping[str, np.ndarray]) -> CaseJudgement | None:
        for kept, judgement in self._kept.get(input_id, ()):
            if identical(kept, outputs):
                return judgement
        return None

    def keep(self, input_id: str, outputs: Mapping[str, np.ndarray], judgement: CaseJudgement) -> None:
        kept = self._kept.setdefault(input_id, [])
        kept.insert(0, (outputs, judgement))
        del kept[self.per_input:]


def _run(kernel, cases: list[RunCase], schedules: list[str], timeout_s: float) -> dict[str, list]:
    """schedule -> per case a `RunResult`, or the message of the launch plan refused for it."""
    try:
        return kernel.run_schedules(cases, schedules, timeout_s=timeout_s)
    except SubmissionError:
        pass
    runs: dict[str, list] = {s: [] for s in schedules}
    for case in cases:          # isolate the cases whose launch plan is refused
        try:
            for s, [result] in kernel.run_schedules([case], schedules, timeout_s=timeout_s).items():
                runs[s].append(result)
        except SubmissionError as err:
            for s in schedules:
                runs[s].append(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__)
    return runs
