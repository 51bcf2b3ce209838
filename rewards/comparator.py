"""The comparator: does a kernel's output match the fp64 reference within tolerance?

An element passes if |out - ref| <= atol + rtol * |ref|; the output
passes if the passing fraction is at least `matched_ratio`. A NaN or Inf in the output where the
reference is finite fails the whole output whatever the ratio (a kernel must not buy its way past
a loose ratio with garbage), and NaN never matches NaN unless `nan_matches` says so.

Outputs that are bitwise `identical` compare identically, so a caller that runs one input under
several thread schedules may reuse the first comparison (most kernels do not depend on the order).
A caller that compares many outputs against one reference (a kill matrix: every mutant against the
same inputs) passes a `Reference`, which holds what depends on the reference alone.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Comparison:
    """Verdict and error statistics of one output against its reference; `tolerance_used` (the
    share of the tolerance budget used, `Comparator.tolerance_used`) only where `measure` was
    asked for it and the output passed."""

    passed: bool
    max_abs: float
    max_rel: float
    mismatch_ratio: float
    message: str = ""
    tolerance_used: float | None = None


@dataclass(frozen=True)
class Comparator:
    """Tolerance rule; `compare(out, ref)` gives a `Comparison`.

    >>> Comparator(atol=1e-2, rtol=1e-2).compare(np.array([1.0, 2.0]), np.array([1.0, 2.01])).passed
    True
    >>> Comparator(atol=1e-2, rtol=1e-2).compare(np.array([np.nan]), np.array([1.0])).message
    'output has 1 NaN/Inf element(s) where the reference is finite (first at index (0,))'
    """

    atol: float
    rtol: float
    matched_ratio: float = 1.0
    nan_matches: bool = False

    def __post_init__(self) -> None:
        if not (self.atol >= 0 and self.rtol >= 0):
            raise ValueError(f"tolerances must be >= 0, got atol={self.atol!r}, rtol={self.rtol!r}")
        if not 0 < self.matched_ratio <= 1:
            raise ValueError(f"matched_ratio must be in (0, 1], got {self.matched_ratio!r}")

    def compare(self, out: np.ndarray, ref: np.ndarray) -> Comparison:
        return self.measure(out, ref)[0]

    def measure(self, out: np.ndarray, ref: "np.ndarray | Reference", ratios: tuple[float, ...] = (),
                *, used: bool = False) -> tuple[Comparison, tuple[float, ...]]:
        """`compare(out, ref)` and `tolerance_needed(out, ref, q)` for each q in `ratios`, with the
        same values, from one |out - ref| pass (a kill matrix needs all of them for every cell),
        and with `used` an output that passes carries its `tolerance_used` from the same pass.
        `ref` may be a `Reference` prepared once for many outputs.

        >>> c, needs = Comparator(1e-2, 1e-2).measure(np.array([1.0, 2.0]), np.array([1.0, 2.02]), (1.0,))
        >>> c.passed, needs == (tolerance_needed(np.array([1.0, 2.0]), np.array([1.0, 2.02])),)
        (True, True)
        """
        out = np.asarray(out)
        reference = ref if isinstance(ref, Reference) else Reference(ref)
        if out.shape != reference.shape:
            return (Comparison(False, float("inf"), float("inf"), 1.0,
                               f"output shape {out.shape} != reference shape {reference.shape}"),
                    tuple(float("inf") if out.size != reference.r.size else
                          tolerance_needed(out, reference.r, q) for q in ratios))
        if out.size == 0:
            return Comparison(True, 0.0, 0.0, 0.0, tolerance_used=0.0 if used else None), tuple(0.0 for _ in ratios)
        errors = _Errors(out, reference)
        comparison = self._verdict(errors, out.shape)
        needs = tuple(errors.needed(q) for q in ratios)
        if used and comparison.passed:
            comparison = replace(comparison, tolerance_used=errors.used(self.atol, self.rtol))
        return comparison, needs

    def tolerance_used(self, out: np.ndarray, ref: "np.ndarray | Reference") -> float:
        """The worst `|out - ref| / (atol + rtol |ref|)` over elements where `out` and `ref` are
        finite (0 where there is none, or the sizes differ)."""
        out = np.asarray(out)
        reference = ref if isinstance(ref, Reference) else Reference(ref)
        if out.size == 0 or out.size != reference.r.size:
            return 0.0
        return _Errors(out, reference).used(self.atol, self.rtol)

    def _verdict(self, e: "_Errors", shape: tuple[int, ...]) -> Comparison:
        with np.errstate(invalid="ignore", over="ignore"):
            threshold = e.ref.threshold(self.atol, self.rtol)
            close = np.less_equal(e.diff, threshold, out=e.close)
            if e.all_finite:         # the common case: no masks needed, same values
                max_abs = float(e.max_diff)
                max_rel = float(np.divide(e.diff, e.ref.rel_denominator, out=e.scratch).max())
                mismatch = float(1.0 - np.count_nonzero(close) / close.size)
                bad_count = 0
            else:
                o, r, ref_finite = e.o, e.r, e.ref_finite
                bad = e.bad
                same_special = (o == r) & ~ref_finite                   # +inf vs +inf, -inf vs -inf
                both_nan = np.isnan(o) & np.isnan(r)
                close = (close & ref_finite) | same_special | (both_nan & self.nan_matches)
                finite_diff = np.where(ref_finite & np.isfinite(o), e.diff, 0.0)
                bad_count = int(bad.sum())
                max_abs = float("inf") if bad_count else float(finite_diff.max())
                rel = finite_diff / e.ref.rel_denominator
                max_rel = float(np.where(bad, np.inf, np.where(ref_finite, rel, 0.0)).max())
                mismatch = float(1.0 - close.mean())
        if bad_count:
            first = np.unravel_index(int(np.argmax(bad)), shape)
            return Comparison(False, max_abs, max_rel, mismatch,
                              f"output has {bad_count} NaN/Inf element(s) where the reference "
                              f"is finite (first at index {tuple(int(i) for i in first)})")
        passed = 1.0 - mismatch >= self.matched_ratio
        message = "" if passed else (
            f"{mismatch:.2%} of elements outside atol={self.atol:g} + rtol={self.rtol:g}*|ref| "
            f"(max abs error {max_abs:.3g}, max rel error {max_rel:.3g})")
        return Comparison(passed, max_abs, max_rel, mismatch, message)


class Reference:
    """A reference output in float64 with what every comparison against it reuses: |ref|, the
    per-element budget atol + rtol * |ref| of each tolerance asked for, and the denominators of
    the relative error, of `tolerance_needed` and of `tolerance_used`. Each is computed on first
    use, then kept.

    >>> ref = Reference(np.array([1.0, 2.02]))
    >>> Comparator(1e-2, 1e-2).compare(np.array([1.0, 2.0]), ref).passed
    True
    """

    def __init__(self, ref: np.ndarray):
        ref = np.asarray(ref)
        self.shape = ref.shape
        self.r = np.asarray(ref, dtype=np.float64).ravel()
        self.abs_ref = np.abs(self.r)
        self._thresholds: dict[tuple[float, float], np.ndarray] = {}
        self._budgets: dict[tuple[float, float], np.ndarray] = {}
        self._rel_denominator = self._need_denominator = self._finite = None

    def threshold(self, atol: float, rtol: float) -> np.ndarray:
        """atol + rtol * |ref| per element."""
        budget = self._thresholds.get((atol, rtol))
        if budget is None:
            with np.errstate(invalid="ignore", over="ignore"):
                budget = np.multiply(self.abs_ref, rtol)
                np.add(budget, atol, out=budget)
            self._thresholds[(atol, rtol)] = budget
        return budget

    def budget(self, atol: float, rtol: float) -> np.ndarray:
        """`threshold`, at least the smallest normal float64: the denominator of `tolerance_used`."""
        budget = self._budgets.get((atol, rtol))
        if budget is None:
            with np.errstate(invalid="ignore"):
                budget = np.maximum(self.threshold(atol, rtol), np.finfo(np.float64).tiny)
            self._budgets[(atol, rtol)] = budget
        return budget

    @property
    def rel_denominator(self) -> np.ndarray:
        if self._rel_denominator is None:
            self._rel_denominator = np.maximum(self.abs_ref, np.finfo(np.float64).tiny)
        return self._rel_denominator

    @property
    def need_denominator(self) -> np.ndarray:
        if self._need_denominator is None:
            self._need_denominator = np.add(self.abs_ref, 1.0)
        return self._need_denominator

    @property
    def finite(self) -> np.ndarray:
        if self._finite is None:
            self._finite = np.isfinite(self.r)
        return self._finite


_workspace = threading.local()


_WORKSPACE_SIZES = 8


def _buffers(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's float64 |out - ref| and scratch arrays and a boolean one, of n elements.

    Reused from comparison to comparison (for the last few sizes seen: a problem's inputs come in
    a few shapes): large temporaries freshly allocated each time cost more in page faults than the
    arithmetic. Nothing a comparison returns refers to them."""
    sizes = getattr(_workspace, "sizes", None)
    if sizes is None:
        sizes = _workspace.sizes = {}
    arrays = sizes.pop(n, None)
    if arrays is None:
        arrays = (np.empty(n), np.empty(n), np.empty(n, dtype=bool))
        if len(sizes) >= _WORKSPACE_SIZES:
            del sizes[next(iter(sizes))]       # the least recently used size
    sizes[n] = arrays
    return arrays


class _Errors:
    """|out - ref| of one non-empty output in float64, computed once and shared by the verdict
    and every `tolerance_needed` ratio; the masks for NaN/Inf only where one occurs."""

    def __init__(self, out: np.ndarray, ref: Reference):
        self.out = np.ravel(out)
        self.ref = ref
        self.r, self.abs_ref = ref.r, ref.abs_ref
        self.diff, self.scratch, self.close = _buffers(self.out.size)
        with np.errstate(invalid="ignore", over="ignore"):
            np.subtract(self.out, self.r, out=self.diff)    # out widens to float64 exactly, in the loop
            np.abs(self.diff, out=self.diff)
        self.max_diff = self.diff.max()          # NaN or Inf unless every element is finite
        self.all_finite = bool(np.isfinite(self.max_diff))
        self.ref_finite = None if self.all_finite else ref.finite
        self._need = None

    @cached_property
    def o(self) -> np.ndarray:
        """The output in float64 (only the NaN/Inf paths need it)."""
        return np.asarray(self.out, dtype=np.float64)

    @cached_property
    def bad(self) -> np.ndarray:
        """NaN or Inf in the output where the reference is finite (only the NaN/Inf paths ask)."""
        return ~np.isfinite(self.o) & self.ref_finite

    def needed(self, matched_ratio: float) -> float:
        """See `tolerance_needed`. An element needs |out - ref| / (1 + |ref|)."""
        if self._need is None:
            if not self.all_finite and self.bad.any():
                self._need = np.array([np.inf])       # the whole output needs infinity
            else:
                self._need = self._element_needs()
        need = self._need
        k = max(int(np.ceil(matched_ratio * need.size)), 1)   # at least k elements must pass
        if k == need.size:
            return float(need.max())
        return float(_kth_smallest(need, k - 1, self.close))

    def used(self, atol: float, rtol: float) -> float:
        """See `Comparator.tolerance_used`. Overwrites the scratch array, which `needed` may hold."""
        if self._need is self.scratch:
            self._need = None
        with np.errstate(invalid="ignore", over="ignore"):
            used = np.divide(self.diff, self.ref.budget(atol, rtol), out=self.scratch)
        worst = used.max()
        if np.isfinite(worst):       # every element finite (the common case): no mask needed
            return float(worst)
        finite = self.ref.finite & np.isfinite(self.o)
        return float(used[finite].max()) if finite.any() else 0.0

    def _element_needs(self) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            need = np.divide(self.diff, self.ref.need_denominator, out=self.scratch)
        if not self.all_finite:
            same_special = (self.o == self.r) & ~self.ref_finite
            need = np.where(self.ref_finite, need, np.where(same_special, 0.0, np.inf))
        return need


#: Below this size a full partition is as cheap as sampling first.
_SAMPLED_SELECTION = 4096
_SAMPLE = 1024


def _kth_smallest(values: np.ndarray, index: int, mask: np.ndarray) -> np.floating:
    """`np.partition(values, index)[index]`, the same value, without partitioning all of `values`
    when `index` is near the top (a 0.99 ratio): a strided sample gives a bound below which at
    most `index` elements probably lie; the elements not below it (NaN included, which sorts last)
    are the top of the sorted order, so when they are enough, the answer is theirs to select.
    Otherwise (an unlucky sample, a low index) the full partition, which reorders `values` in
    place (the same values). `mask`: a boolean scratch array of the same size, overwritten."""
    n = values.size
    above = n - index               # how many elements sit at or above the answer's position
    if n >= _SAMPLED_SELECTION:
        stride = n // _SAMPLE
        sample = values[::stride]
        spare = sample.size - (-(-2 * above * sample.size // n) + 8)    # twice the share, and a margin
        if spare > 0:
            bound = np.partition(sample, spare)[spare]
            np.less(values, bound, out=mask)
            np.logical_not(mask, out=mask)
            top = values[mask]
            if top.size >= above:
                position = index - (n - top.size)
                top.partition(position)
                return top[position]
    values.partition(index)
    return values[index]


def tolerance_needed(out: np.ndarray, ref: np.ndarray, matched_ratio: float = 1.0) -> float:
    """The smallest t for which `Comparator(atol=t, rtol=t, matched_ratio)` accepts *out*.

    It lets a kill matrix computed once be re-scored exactly under any checker whose atol equals
    its rtol (every published preset): the output passes at t iff t >= tolerance_needed.
    An element needs |out - ref| / (1 + |ref|); NaN or Inf where the reference is finite needs
    infinity, and then so does the whole output, whatever the ratio.

    >>> tolerance_needed(np.array([1.0, 2.0]), np.array([1.0, 2.02]))
    0.006622516556291397
    >>> Comparator(0.0067, 0.0067).compare(np.array([1.0, 2.0]), np.array([1.0, 2.02])).passed
    True
    """
    o = np.asarray(out)
    r = np.asarray(ref)
    if o.size != r.size:
        return float("inf")
    if o.size == 0:
        return 0.0
    return _Errors(o, Reference(r)).needed(matched_ratio)


def identical(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> bool:
    """Whether two sets of named outputs are the same bytes (same names, dtypes and shapes).

    >>> identical({"y": np.array([0.0])}, {"y": np.array([-0.0])})
    False
    """
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes() for k in a)
