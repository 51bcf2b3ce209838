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
