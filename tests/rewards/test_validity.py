"""The validity gate and the validity ceiling, on the real CPU runtime and catalog kernels."""

import doctest

import numpy as np

import mutagym.rewards.validity as validity_module
from mutagym.rewards.comparator import Comparator
from mutagym.rewards.generators import generate
from mutagym.rewards.judging import tolerance_used
from mutagym.rewards.validity import check_validity, validity_ceiling
from mutagym.substrates.catalog import load_problem


def test_docstrings_run():
    """The module's doctests pass."""
    assert doctest.testmod(validity_module).failed == 0


def test_tolerance_used_counts_only_finite_elements():
    """NaN or Inf in the output or the reference is skipped (the comparator judges those); with no
    finite element nothing is used."""
    c = Comparator(1e-2, 0.0)
    out = np.array([1.0, 2.005, np.nan, np.inf, 5.0, -np.inf])
    ref = np.array([1.0, 2.0, 3.0, np.inf, np.nan, -np.inf])
    assert round(tolerance_used(out, ref, c), 6) == 0.5
    assert tolerance_used(np.array([np.nan]), np.array([1.0]), c) == 0.0
    assert tolerance_used(np.zeros(0), np.zeros(0), c) == 0.0


class TestCheckValidity:
    def test_ordinary_inputs_are_valid_with_legitimate_error(self):
        """softmax on normal inputs: valid, and the correct kernels' error is recorded (> 0, < budget)."""
        p = load_problem("softmax")
        verdicts = check_validity(p, [generate(p, "normal", preset="remainder"),
                                      generate(p, "large_offset", preset="tiny")])
        assert all(v.valid and v.reason == "" for v in verdicts)
        v = verdicts[0]
        assert 0 < v.max_abs < 1e-2 and v.max_rel > 0 and 0 < v.tolerance_used < 1

    def test_large_magnitude_rejected_on_a_long_scan(self):
        """The fuzz recipe makes correct fp32 cumsum kernels fail on a 2**18 reduction: invalid, with reason."""
        p = load_problem("cumsum")
        good = generate(p, "normal", preset="large_reduction")
        bad = generate(p, "large_magnitude", preset="large_reduction")
        v_good, v_bad = check_validity(p, [good, bad])
        assert v_good.valid
        assert not v_bad.valid
        assert v_bad.reason.startswith("kernel ") and "output 'out'" in v_bad.reason
        assert "outside atol=0.01" in v_bad.reason
        kernels = {f[0] for f in v_bad.failures}
        assert kernels <= set(p.kernel_sources())

    def test_validity_depends_on_the_comparator(self):
        """An input valid under the problem's tolerance is invalid under atol = rtol = 0; the reason names
        the kernel and the output."""
        p = load_problem("softmax")
        g = generate(p, "normal", preset="remainder")
        [loose] = check_validity(p, [g])
        [tight] = check_validity(p, [g], Comparator(atol=0.0, rtol=0.0))
        assert loose.valid and not tight.valid
        assert "output 'out'" in tight.reason and "kernel '" in tight.reason

    def test_schedules_are_all_checked(self):
        """Every schedule runs every kernel; a valid input stays valid in both orders."""
        p = load_problem("layernorm")
        [v] = check_validity(p, [generate(p, "affine_perturbed", preset="remainder")],
                             schedules=("ascending", "descending"))
        assert v.valid and v.tolerance_used > 0

    def test_every_schedule_reports_its_failures(self):
        """A later schedule with the same outputs is not compared again, yet reports the same failures:
        under atol = rtol = 0 each correct kernel fails in each schedule, in order."""
        p = load_problem("softmax")
        [v] = check_validity(p, [generate(p, "normal", preset="remainder")], Comparator(atol=0.0, rtol=0.0),
                             schedules=("ascending", "descending"))
        expected = [(k, s) for k in p.kernel_sources() for s in ("ascending", "descending")]
        assert [(k, s) for k, s, _, _ in v.failures] == expected
        assert v.failures[0][2:] == v.failures[1][2:]

    def test_empty_list(self):
        """No inputs, no verdicts, nothing compiled."""
        assert check_validity(load_problem("relu"), []) == []


class TestValidityCeiling:
    def test_cumsum_ceiling_on_a_long_reduction(self):
        """Sign-mixed cumsum over 2**18: x1000 still passes, x3000 breaks a correct kernel."""
        r = validity_ceiling(load_problem("cumsum"), scales=(1, 1000, 3000, 10000))
        assert r.preset == "large_reduction"
        assert r.largest_valid_scale == 1000 and r.first_invalid_scale == 3000
        assert "kernel '" in r.reason
        assert [s for s, _, _ in r.scales] == [1, 1000, 3000, 10000]

    def test_elementwise_has_no_ceiling(self):
        """ReLU is exact at any scale: no scale fails."""
        r = validity_ceiling(load_problem("relu"), preset="remainder", scales=(1, 1e6, 1e12))
        assert r.largest_valid_scale == 1e12 and r.first_invalid_scale is None and r.reason == ""
