"""The comparator's contract: tolerance rule, matched ratio, NaN/Inf handling, shape errors."""

import numpy as np
import pytest

from mutagym.rewards.comparator import Comparator, tolerance_needed


class TestCompare:
    def test_within_tolerance_passes(self):
        """|out - ref| <= atol + rtol |ref| on every element passes."""
        c = Comparator(atol=1e-2, rtol=1e-2).compare(np.array([1.0, 100.0]), np.array([1.015, 101.0]))
        assert c.passed and c.mismatch_ratio == 0.0

    def test_outside_tolerance_fails_with_statistics(self):
        """One element off by 0.5 fails and the message carries the error figures."""
        c = Comparator(atol=1e-2, rtol=1e-2).compare(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
        assert not c.passed
        assert c.max_abs == pytest.approx(0.5) and c.mismatch_ratio == 0.5
        assert "50.00% of elements outside atol=0.01" in c.message

    def test_matched_ratio_tolerates_a_fraction(self):
        """With matched_ratio 0.99, one bad element in 200 passes; three do not."""
        ref = np.zeros(200)
        out = ref.copy()
        out[0] = 1.0
        assert Comparator(1e-2, 1e-2, matched_ratio=0.99).compare(out, ref).passed
        out[:3] = 1.0
        assert not Comparator(1e-2, 1e-2, matched_ratio=0.99).compare(out, ref).passed

    def test_nan_where_reference_finite_always_fails(self):
        """A NaN cannot hide behind a loose matched ratio."""
        ref = np.zeros(1000)
        out = ref.copy()
        out[7] = np.nan
        c = Comparator(1e-2, 1e-2, matched_ratio=0.5).compare(out, ref)
        assert not c.passed and "first at index (7,)" in c.message

    def test_nan_matches_nan_only_when_allowed(self):
        ref = np.array([np.nan, 1.0])
        out = np.array([np.nan, 1.0])
        assert not Comparator(1e-2, 1e-2).compare(out, ref).passed
        assert Comparator(1e-2, 1e-2, nan_matches=True).compare(out, ref).passed

    def test_matching_infinities_pass(self):
        ref = np.array([np.inf, -np.inf])
        assert Comparator(0, 0).compare(ref.copy(), ref).passed
        assert not Comparator(0, 0).compare(-ref, ref).passed

    def test_shape_mismatch_fails(self):
        c = Comparator(1e-2, 1e-2).compare(np.zeros(3), np.zeros(4))
        assert not c.passed and "(3,) != reference shape (4,)" in c.message

    def test_all_zeros_pass_inside_the_blind_band(self):
        """The paper's blind band: a tiny reference makes an all-zeros output pass at atol 1e-2."""
        ref = np.full(4096, 1.0 / 4096)
        assert Comparator(1e-2, 1e-2).compare(np.zeros(4096), ref).passed

    @pytest.mark.parametrize("kwargs, match", [
        ({"atol": -1.0, "rtol": 0.0}, r"tolerances must be >= 0, got atol=-1.0"),
        ({"atol": 0.0, "rtol": 0.0, "matched_ratio": 0.0}, r"matched_ratio must be in \(0, 1\], got 0.0"),
    ])
    def test_bad_settings_are_named(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            Comparator(**kwargs)


class TestToleranceNeeded:
    @pytest.mark.parametrize("ratio", [1.0, 0.99, 0.5])
    def test_agrees_with_the_comparator_on_random_outputs(self, ratio):
        """Passing at t is t >= tolerance_needed (up to rounding at the boundary), for any ratio."""
        rng = np.random.default_rng(0)
        for trial in range(200):
            ref = rng.standard_normal(50) * 10 ** rng.uniform(-3, 3)
            out = ref + rng.standard_normal(50) * 10 ** rng.uniform(-6, 0)
            need = tolerance_needed(out, ref, ratio)
            assert Comparator(need * (1 + 1e-9), need * (1 + 1e-9), ratio).compare(out, ref).passed, trial
            assert not Comparator(need * 0.999, need * 0.999, ratio).compare(out, ref).passed, trial

    def test_nan_output_needs_infinity_whatever_the_ratio(self):
        out, ref = np.array([np.nan, 1.0, 1.0]), np.array([0.0, 1.0, 1.0])
        assert tolerance_needed(out, ref, 0.5) == float("inf")

    def test_matching_infinities_need_nothing(self):
        assert tolerance_needed(np.array([np.inf]), np.array([np.inf])) == 0.0


def _oracle(out, ref, atol, rtol, matched_ratio, nan_matches):
    """The rules written elementwise and plainly: (passed, max_abs, max_rel, mismatch, needs)."""
    o, r = np.asarray(out, dtype=np.float64).ravel(), np.asarray(ref, dtype=np.float64).ravel()
    bad = ~np.isfinite(o) & np.isfinite(r)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(o - r)
        close = np.where(np.isfinite(r), diff <= atol + rtol * np.abs(r),
                         (o == r) | (np.isnan(o) & np.isnan(r) & nan_matches))
        finite = np.isfinite(o) & np.isfinite(r)
        rel = np.where(finite, diff, 0.0) / np.maximum(np.abs(r), np.finfo(np.float64).tiny)
        need = np.where(np.isfinite(r), diff / (1.0 + np.abs(r)), np.where(o == r, 0.0, np.inf))
    mismatch = 1.0 - np.count_nonzero(close) / close.size
    if bad.any():
        return False, np.inf, np.inf, mismatch, (np.inf, np.inf)
    needs = tuple(float(np.sort(need)[max(int(np.ceil(q * need.size)), 1) - 1]) for q in (1.0, 0.99))
    return (1.0 - mismatch >= matched_ratio, float(np.where(finite, diff, 0.0).max()),
            float(np.where(np.isfinite(r), rel, 0.0).max()), mismatch, needs)


class TestMeasure:
    def test_equals_the_rules_and_the_separate_functions(self):
        """`measure` gives exactly (same floats) the verdict and tolerance needed that the plain rules,
        `compare` and `tolerance_needed` give, on random fp16/fp32/fp64 outputs with NaN and Inf."""
        rng = np.random.default_rng(7)
        specials = (np.nan, np.inf, -np.inf)
        for trial in range(600):
            n = int(rng.integers(1, 400))
            ref = rng.standard_normal(n) * 10 ** rng.uniform(-3, 3)
            out = (ref + rng.standard_normal(n) * 10 ** rng.uniform(-8, 1)).astype(
                rng.choice([np.float16, np.float32, np.float64]))
            for arr in (out, ref):
                if rng.random() < 0.3:
                    arr[rng.integers(0, n, 3)] = rng.choice(specials, 3)
            if rng.random() < 0.2:
                out = ref.astype(out.dtype)
            kw = dict(atol=float(10 ** rng.uniform(-6, 0)), rtol=float(10 ** rng.uniform(-6, 0)),
                      matched_ratio=float(rng.choice([1.0, 0.99, 0.5])), nan_matches=bool(rng.random() < 0.3))
            c, needs = Comparator(**kw).measure(out, ref, (1.0, 0.99))
            alone = Comparator(**kw).compare(out, ref)
            assert c == alone, trial
            assert needs == (tolerance_needed(out, ref), tolerance_needed(out, ref, 0.99)), trial
            passed, max_abs, max_rel, mismatch, oracle_needs = _oracle(out, ref, **kw)
            assert (c.passed, c.max_abs, c.max_rel, c.mismatch_ratio, needs) == (
                passed, max_abs, max_rel, mismatch, oracle_needs), trial

    def test_a_prepared_reference_gives_the_same_floats(self):
        """A `Reference` reused across outputs and tolerances, with outputs of other sizes compared
        in between (the reused scratch arrays), gives exactly what a plain array gives."""
        from mutagym.rewards.comparator import Reference
        rng = np.random.default_rng(11)
        refs = [rng.standard_normal(n) * 10 ** rng.uniform(-3, 3) for n in (1, 5, 400, 3000)]
        refs[2][[4, 9]] = (np.inf, np.nan)
        prepared = [Reference(r) for r in refs]
        for trial in range(200):
            k = int(rng.integers(0, len(refs)))
            ref = refs[k]
            out = (ref + rng.standard_normal(ref.size) * 10 ** rng.uniform(-8, 1)).astype(np.float32)
            if rng.random() < 0.3:
                out[rng.integers(0, ref.size)] = np.nan
            comparator = Comparator(atol=float(rng.choice([1e-2, 1e-4])), rtol=float(rng.choice([1e-2, 0.0])),
                                    matched_ratio=float(rng.choice([1.0, 0.99])))
            assert comparator.measure(out, prepared[k], (1.0, 0.99)) == comparator.measure(out, ref, (1.0, 0.99)), trial

    def test_shape_mismatch_and_empty(self):
        c, needs = Comparator(1e-2, 1e-2).measure(np.zeros((2, 3)), np.zeros((3, 2)), (1.0,))
        assert not c.passed and needs == (tolerance_needed(np.zeros((2, 3)), np.zeros((3, 2))),)
        c, needs = Comparator(1e-2, 1e-2).measure(np.zeros(0), np.zeros(0), (1.0, 0.99))
        assert c.passed and needs == (0.0, 0.0)


def test_identical_is_bitwise():
    from mutagym.rewards.comparator import identical
    a = {"y": np.array([1.0, np.nan], dtype=np.float32)}
    assert identical(a, {"y": a["y"].copy()})
    assert not identical(a, {"y": a["y"].astype(np.float64)})
    assert not identical(a, {"y": np.array([1.0, 2.0], dtype=np.float32)})
    assert not identical(a, {"z": a["y"]})
