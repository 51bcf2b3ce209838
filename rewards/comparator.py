"""The comparator: does a kernel's output match the fp64 reference within tolerance?

DESIGN.md "Checker semantics": an element passes if |out - ref| <= atol + rtol * |ref|; the output
passes if the passing fraction is at least `matched_ratio`. A NaN or Inf in the output where the
reference is finite fails the whole output whatever the ratio (a kernel must not buy its way past
a loose ratio with garbage), and NaN never matches NaN unless `nan_matches` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Comparison:
    """Verdict and error statistics of one output against its reference."""

    passed: bool
    max_abs: float
    max_rel: float
    mismatch_ratio: float
    message: str = ""


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
        out = np.asarray(out)
        ref = np.asarray(ref)
        if out.shape != ref.shape:
            return Comparison(False, float("inf"), float("inf"), 1.0,
                              f"output shape {out.shape} != reference shape {ref.shape}")
        if out.size == 0:
            return Comparison(True, 0.0, 0.0, 0.0)
        o = out.astype(np.float64).ravel()
        r = ref.astype(np.float64).ravel()
        ref_finite = np.isfinite(r)
        bad = ~np.isfinite(o) & ref_finite
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(o - r)
            close = diff <= self.atol + self.rtol * np.abs(r)
        same_special = (o == r) & ~ref_finite                   # +inf vs +inf, -inf vs -inf
        both_nan = np.isnan(o) & np.isnan(r)
        close = (close & ref_finite) | same_special | (both_nan & self.nan_matches)
        finite_diff = np.where(ref_finite & np.isfinite(o), diff, 0.0)
        max_abs = float("inf") if bad.any() else float(finite_diff.max())
        with np.errstate(over="ignore"):
            rel = finite_diff / np.maximum(np.abs(r), np.finfo(np.float64).tiny)
        max_rel = float(np.where(bad, np.inf, np.where(ref_finite, rel, 0.0)).max())
        mismatch = float(1.0 - close.mean())
        if bad.any():
            first = np.unravel_index(int(np.argmax(bad)), out.shape)
            return Comparison(False, max_abs, max_rel, mismatch,
                              f"output has {int(bad.sum())} NaN/Inf element(s) where the reference "
                              f"is finite (first at index {tuple(int(i) for i in first)})")
        passed = 1.0 - mismatch >= self.matched_ratio
        message = "" if passed else (
            f"{mismatch:.2%} of elements outside atol={self.atol:g} + rtol={self.rtol:g}*|ref| "
            f"(max abs error {max_abs:.3g}, max rel error {max_rel:.3g})")
        return Comparison(passed, max_abs, max_rel, mismatch, message)


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
    o = np.asarray(out, dtype=np.float64).ravel()
    r = np.asarray(ref, dtype=np.float64).ravel()
    if o.shape != r.shape:
        return float("inf")
    if o.size == 0:
        return 0.0
    ref_finite = np.isfinite(r)
    if np.any(~np.isfinite(o) & ref_finite):
        return float("inf")
    with np.errstate(invalid="ignore", over="ignore"):
        need = np.abs(o - r) / (1.0 + np.abs(r))
    same_special = (o == r) & ~ref_finite
    need = np.where(ref_finite, need, np.where(same_special, 0.0, np.inf))
    k = max(int(np.ceil(matched_ratio * need.size)), 1)   # at least k elements must pass
    return float(need.max() if k == need.size else np.partition(need, k - 1)[k - 1])
