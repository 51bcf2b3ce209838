"""Attribution of a checker's detection gain to inputs and tolerance."""

import doctest

import numpy as np
import pytest

import mutagym.rewards.attribution as attribution_module
from mutagym.rewards.attribution import attribute
from mutagym.rewards.checker import crossed, evaluate, load_checker
from mutagym.substrates.catalog import load_problem


def test_docstrings_run():
    """The module's doctests pass."""
    assert doctest.testmod(attribution_module).failed == 0


def synthetic(aa, ba, ab, bb, pool=200):
    """A detected() whose four crossed cells kill the first `n` of `pool` mutants."""
    counts = {("A", "A"): aa, ("B", "A"): ba, ("A", "B"): ab, ("B", "B"): bb}
    calls = []

    def detected(inputs_of, comparator_of):
        calls.append((inputs_of, comparator_of))
        return {f"m{i}" for i in range(counts[inputs_of, comparator_of])} | {"not-witnessed"}

    return detected, [f"m{i}" for i in range(pool)], calls


class TestAttribute:
    def test_paper_split(self):
        """An additive example: +8.5 points = +4.0 inputs + +4.5 tolerance in both orders."""
        detected, pool, calls = synthetic(166, 174, 175, 183)
        r = attribute(detected, "A", "B", witnessed=pool)
        assert sorted(calls) == [("A", "A"), ("A", "B"), ("B", "A"), ("B", "B")]
        assert r.points() == {"gain": 8.5, "inputs": 4.0, "tolerance": 4.5, "interaction": 0.0}
        assert r.inputs_first == pytest.approx((0.04, 0.045))
        assert r.tolerance_first == pytest.approx((0.04, 0.045))
        assert r.total == 200 and r.det_aa == 0.83

    def test_interaction_shared(self):
        """With interaction the two orders differ and the Shapley split averages them."""
        detected, pool, _ = synthetic(160, 170, 166, 180)
        r = attribute(detected, "A", "B", witnessed=pool)
        assert r.inputs_first == pytest.approx((0.05, 0.05))         # inputs +10, then tolerance +10
        assert r.tolerance_first == pytest.approx((0.07, 0.03))      # tolerance +6, then inputs +14
        assert r.points() == {"gain": 10.0, "inputs": 6.0, "tolerance": 4.0, "interaction": 2.0}
        assert r.inputs + r.tolerance == pytest.approx(r.gain)

    def test_negative_parts(self):
        """A looser tolerance in B shows as a negative tolerance part."""
        detected, pool, _ = synthetic(100, 150, 80, 130)
        p = attribute(detected, "A", "B", witnessed=pool).points()
        assert p == {"gain": 15.0, "inputs": 25.0, "tolerance": -10.0, "interaction": 0.0}

    def test_empty_pool(self):
        """An empty witnessed pool is refused."""
        with pytest.raises(ValueError, match="non-empty witnessed pool"):
            attribute(lambda i, c: set(), "A", "B", witnessed=[])


def test_with_checker_versions():
    """On real checkers: KernelBench-Verified's gain over KernelBench on three relu faults,
    judged by crossed() checkers through evaluate()."""
    kb, kbv = load_checker("kernelbench"), load_checker("kernelbench-verified")
    relu = load_problem("relu")
    faults = {
        "deleted_relu": lambda x: x,                            # caught only by negated inputs
        "off_by_2e-3": lambda x: np.maximum(x, 0) + 2e-3,       # caught only by the 1e-3 tolerance
        "abs": lambda x: np.abs(x),                             # caught by negated inputs
    }

    def detected(inputs_of, comparator_of):
        checker = crossed(inputs_of, comparator_of)
        return {name for name, f in faults.items()
                if not evaluate(checker, relu, lambda g, f=f: {"out": f(g.inputs["x"])}).accepted}

    r = attribute(detected, kb, kbv, witnessed=faults)
    assert (r.det_aa, r.det_bb) == (0.0, 1.0)
    assert r.inputs_first == pytest.approx((2 / 3, 1 / 3))
    assert r.tolerance_first == pytest.approx((2 / 3, 1 / 3))
    assert r.inputs == pytest.approx(2 / 3) and r.tolerance == pytest.approx(1 / 3)
