"""The envelope: what a correct kernel's error is on this very input, as the yardstick of a reward.

A flat tolerance (1e-2 for most problems) pays a kernel whose error is a hundred times the worst
correct kernel's, so long as it stays under 1e-2. But every input that judges has been run by
every correct kernel of its problem (the validity gate), so their error on that input is known:
per output, the largest share of the problem's tolerance budget any of them used,
`used = max |out - ref| / (atol + rtol |ref|)` over elements, kernels and thread orders. That
number, kept per input and output, is the input's envelope.

The rule (`EnvelopeRule`) rejects an output whose error exceeds a calibrated `multiple` of the
envelope, with two floors: `ulps` units in the last place of the output's dtype, so an input on
which every correct kernel is exact does not demand bit-exactness, and a `least_share` of the
flat budget that an output may always use. An element passes if

    |out - ref| <= max(k * (atol + rtol |ref|), ulps * ulp(ref)),   k = max(least_share, min(1, multiple * used))

where atol and rtol are the problem's own (the flat check still applies beside this one). The
multiple and the floor are calibrated on every correct kernel the project owns
(benchmarks/bench_envelope.py; the figures are in benchmarks/README.md). Integer outputs are
compared exactly by the flat check and have no envelope.

>>> import numpy as np
>>> rule = EnvelopeRule(multiple=4.0, ulps=8.0, least_share=0.0)
>>> env = InputEnvelope(atol=1e-2, rtol=1e-2, used={"out": 0.001})
>>> ref = np.array([1.0, 2.0])
>>> rule.judge(np.array([1.0, 2.0 + 1e-4], np.float32), ref, env, "out").passed
True
>>> rule.judge(np.array([1.0, 2.0 + 5e-3], np.float32), ref, env, "out").passed
False
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..runtime.buffers import numpy_dtype
from .comparator import Reference

__all__ = ["DEFAULT_RULE", "EnvelopeJudgement", "EnvelopeRule", "EnvelopeSet", "InputEnvelope", "ulp"]


def _float_info(dtype: np.dtype) -> tuple[int, int] | None:
    """(significand bits including the implicit one, minimum normal exponent) of a float dtype,
    None for a dtype that is not floating point."""
    if dtype.name == "bfloat16":
        return 8, -126
    if not np.issubdtype(dtype, np.floating):
        return None
    info = np.finfo(dtype)
    return info.nmant + 1, info.minexp


def ulp(values: np.ndarray, dtype: np.dtype | str) -> np.ndarray | None:
    """The unit in the last place of `dtype` at each of `values` (float64): the spacing of that
    dtype's numbers around the value, the subnormal spacing below the smallest normal. None for a
    dtype that is not floating point.

    >>> ulp(np.array([1.0, 0.0, 3.0]), "float32").tolist() == [2.0 ** -23, 2.0 ** -149, 2.0 ** -22]
    True
    """
    info = _float_info(numpy_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype))
    if info is None:
        return None
    bits, min_exp = info
    magnitude = np.abs(values)
    _, exponent = np.frexp(magnitude)                # |v| = m * 2**exponent, m in [0.5, 1)
    exponent = np.maximum(np.where(magnitude > 0, exponent - 1, min_exp), min_exp)   # subnormals: the lowest binade
    return np.ldexp(1.0, exponent - (bits - 1))


@dataclass(frozen=True)
class InputEnvelope:
    """The correct kernels' error on one input: per output, the largest share `used` of the
    problem's budget `atol + rtol |ref|` they used (measured at that `atol` and `rtol`), and
    `seconds`, the longest any of them ran on it (None where not measured)."""

    atol: float
    rtol: float
    used: Mapping[str, float] = field(default_factory=dict)
    seconds: float | None = None

    def as_dict(self) -> dict:
        doc = {"atol": self.atol, "rtol": self.rtol, "used": dict(sorted(self.used.items()))}
        return doc if self.seconds is None else {**doc, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, doc: Mapping) -> "InputEnvelope":
        seconds = doc.get("seconds")
        return cls(float(doc["atol"]), float(doc["rtol"]), {k: float(v) for k, v in doc["used"].items()},
                   None if seconds is None else float(seconds))


@dataclass(frozen=True)
class EnvelopeJudgement:
    """One output against its envelope: `passed`, and `used`, the largest share of the
    envelope's per-element allowance the output used (above 1 fails)."""

    passed: bool
    used: float
    message: str = ""


@dataclass(frozen=True)
class EnvelopeRule:
    """Reject an output whose error exceeds `multiple` times the correct kernels' on the same
    input, never below `ulps` units in the last place of the output's dtype nor below
    `least_share` of the flat budget.

    Time has an envelope too: a case may run `time_multiple` times the slowest correct kernel's
    time on the input, at least `time_floor_s` and at most `time_cap_s` (`timeout_s`), so a
    correct kernel slower than the catalog's is not cut off by a flat limit on a costly input, and
    a kernel that hangs on a cheap one is stopped early."""

    multiple: float
    ulps: float
    least_share: float
    time_multiple: float = 16.0
    time_floor_s: float = 5.0
    time_cap_s: float = 120.0

    def __post_init__(self) -> None:
        if not (self.multiple >= 1 and self.ulps >= 0 and 0 <= self.least_share <= 1):
            raise ValueError(f"EnvelopeRule(multiple={self.multiple!r}, ulps={self.ulps!r}, least_share="
                             f"{self.least_share!r}): the multiple must be >= 1 (a correct kernel must pass "
                             "its own envelope), ulps >= 0 and the least share in [0, 1]")
        if not (self.time_multiple >= 1 and 0 < self.time_floor_s <= self.time_cap_s):
            raise ValueError(f"EnvelopeRule(time_multiple={self.time_multiple!r}, time_floor_s="
                             f"{self.time_floor_s!r}, time_cap_s={self.time_cap_s!r}): the time multiple must "
                             "be >= 1 and 0 < floor <= cap")

    def as_dict(self) -> dict:
        return {"multiple": self.multiple, "ulps": self.ulps, "least_share": self.least_share,
                "time_multiple": self.time_multiple, "time_floor_s": self.time_floor_s,
                "time_cap_s": self.time_cap_s}

    def timeout_s(self, envelope: InputEnvelope) -> float | None:
        """The time a case on this input may take, None where the envelope has no time (the
        caller's flat limit applies).

        >>> rule = EnvelopeRule(1024.0, 16.0, 1e-4)
        >>> [rule.timeout_s(InputEnvelope(1e-2, 1e-2, {}, s)) for s in (None, 0.01, 2.0, 60.0)]
        [None, 5.0, 32.0, 120.0]
        """
        if envelope.seconds is None:
            return None
        return min(self.time_cap_s, max(self.time_floor_s, self.time_multiple * envelope.seconds))

    def share(self, used: float) -> float:
        """The share of the flat budget an output may use where the correct kernels used `used`."""
        return max(self.least_share, min(1.0, self.multiple * used))

    def allowance(self, ref: Reference, envelope: InputEnvelope, output: str, dtype: np.dtype) -> np.ndarray | None:
        """Per element, the error an output of `dtype` may have; None when it has no envelope
        (an output the envelope does not name, or not floating point)."""
        if output not in envelope.used:
            return None
        floor = ulp(ref.r, dtype)
        if floor is None:
            return None
        with np.errstate(invalid="ignore", over="ignore"):
            return np.maximum(ref.threshold(envelope.atol, envelope.rtol) * self.share(envelope.used[output]),
                              self.ulps * floor)

    def judge(self, out: np.ndarray, ref: "np.ndarray | Reference", envelope: InputEnvelope,
              output: str) -> EnvelopeJudgement:
        """`out` (an output the flat check passed) against the allowance; elements where the
        reference is not finite are the flat check's alone."""
        out = np.asarray(out)
        reference = ref if isinstance(ref, Reference) else Reference(ref)
        allowed = self.allowance(reference, envelope, output, out.dtype)
        if allowed is None or out.size == 0:
            return EnvelopeJudgement(True, 0.0)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            diff = np.abs(np.ravel(out).astype(np.float64) - reference.r)
            share = np.where(reference.finite & np.isfinite(diff), diff / allowed, 0.0)
        worst = float(share.max())
        if worst <= 1.0:
            return EnvelopeJudgement(True, worst)
        k = self.share(envelope.used[output])
        at = int(np.argmax(share))
        return EnvelopeJudgement(False, worst, (
            f"error {worst:.3g} times what this input allows (at element {at}: |out - ref| = {diff[at]:.3g}); "
            f"the correct kernels use {envelope.used[output]:.3g} of the tolerance budget here, a kernel may "
            f"use {self.multiple:g} times that ({k:.3g} of atol={envelope.atol:g} + rtol={envelope.rtol:g}*|ref|,"
            f" at least {self.least_share:g}) or {self.ulps:g} ulps"))


#: The gate's rule, calibrated on every correct kernel the project owns (benchmarks/README.md,
#: "The envelope"): no correct kernel is rejected by it on any input of the pool of record.
DEFAULT_RULE = EnvelopeRule(multiple=1024.0, ulps=16.0, least_share=1e-4)



@dataclass(frozen=True)
class EnvelopeSet:
    """The envelopes a stage's inputs are judged against, by input id, and the rule to use."""

    rule: EnvelopeRule
    by_input: Mapping[str, InputEnvelope] = field(default_factory=dict)

    def check_for(self, input_id: str) -> "tuple[EnvelopeRule, InputEnvelope] | None":
        """(rule, envelope) of an input, None for one without an envelope."""
        envelope = self.by_input.get(input_id)
        return None if envelope is None else (self.rule, envelope)
