"""Suite optimisation (greedy and HiGHS), the held-out hash split, and detection-rate scoring."""

import doctest
import itertools

import numpy as np
import pytest

import mutagym.rewards.suites as suites_module
from mutagym.rewards.suites import (Rate, bootstrap_interval, detection_rate, exact_cover, fill_budget, greedy_cover,
                                    hash_split, heldout_evaluation, killed_matrix, select_suite)

# Greedy's classic trap: "c" kills 4 mutants, but "a" + "b" cover all six.
TRAP = np.array([[1, 0, 1], [1, 0, 1], [1, 0, 0], [0, 1, 1], [0, 1, 1], [0, 1, 0]], bool)
TRAP_INPUTS = ["a", "b", "c"]
TRAP_MUTANTS = [f"m{i}" for i in range(6)]


def ids(n, prefix="i"):
    return [f"{prefix}{j:03d}" for j in range(n)]


def covered(K, cols):
    return int(K[:, list(cols)].any(axis=1).sum()) if cols else 0


def test_docstrings_run():
    """The module's doctests pass."""
    assert doctest.testmod(suites_module).failed == 0


class TestGreedy:
    def test_trap(self):
        """Greedy takes the biggest input first and needs three."""
        s = select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, exact=False)
        assert s.inputs == ["c", "a", "b"] and s.method == "greedy" and not s.optimal
        assert s.uncovered == [] and s.detection == 1.0

    def test_tie_break_by_input_id(self):
        """Equal new kills: the smallest input id wins, whatever the column order."""
        K = np.array([[1, 1, 0], [0, 0, 1]], bool)
        assert greedy_cover(K, ["z", "b", "y"]) == [1, 2]
        assert greedy_cover(K[:, [1, 0, 2]], ["b", "z", "y"]) == [0, 2]
        K = np.array([[1, 0, 0], [1, 1, 1], [0, 1, 0], [0, 0, 1]], bool)   # gains 2, 2, 2
        assert [["q", "p", "r"][j] for j in greedy_cover(K, ["q", "p", "r"])] == ["p", "q", "r"]

    def test_most_new_kills_first(self):
        """Each step counts only mutants not yet killed."""
        K = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1]], bool)
        assert greedy_cover(K, ["a", "b", "c"]) == [0, 2]

    def test_deterministic(self):
        """Same matrix, same suite."""
        K = np.random.default_rng(3).random((40, 15)) < 0.2
        assert all(select_suite(K, ids(15), ids(40, "m"), exact=False) ==
                   select_suite(K, ids(15), ids(40, "m"), exact=False) for _ in range(3))


class TestExact:
    def test_trap_optimum(self):
        """HiGHS finds the two-input cover greedy misses."""
        s = select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, exact=True)
        assert s.inputs == ["a", "b"] and s.method == "exact" and s.optimal
        assert s.covered == TRAP_MUTANTS and s.uncovered == []
        assert select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS).inputs == ["a", "b"]    # auto: small -> exact

    def test_budget_trap(self):
        """At a budget of 2, greedy covers 5 and HiGHS all 6; at 1, both take "c"."""
        g = select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, budget=2, exact=False)
        e = select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, budget=2, exact=True)
        assert len(g.covered) == 5 and g.inputs == ["c", "a"]
        assert len(e.covered) == 6 and e.inputs == ["a", "b"] and e.optimal
        assert select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, budget=1, exact=True).inputs == ["c"]
        assert select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, budget=0).inputs == []

    @pytest.mark.parametrize("seed", range(6))
    def test_random_exact_never_larger_and_optimal(self, seed):
        """On small random matrices HiGHS covers everything coverable with the brute-force minimum,
        never more inputs than greedy."""
        rng = np.random.default_rng(seed)
        K = rng.random((25, 9)) < 0.18
        K[0] = False                                            # an unkillable mutant
        g = select_suite(K, ids(9), ids(25, "m"), exact=False)
        e = select_suite(K, ids(9), ids(25, "m"), exact=True)
        assert len(e.inputs) <= len(g.inputs)
        assert set(e.covered) == set(g.covered) == {m for m, row in zip(ids(25, "m"), K) if row.any()}
        assert "m000" in e.uncovered
        target = covered(K, range(9))
        brute = min(k for k in range(10) for c in itertools.combinations(range(9), k)
                    if covered(K, c) == target)
        assert len(e.inputs) == brute

    @pytest.mark.parametrize("seed", range(4))
    def test_random_budget_max_coverage(self, seed):
        """At budget k HiGHS covers the brute-force maximum, at least greedy's, with <= k inputs."""
        rng = np.random.default_rng(100 + seed)
        K = rng.random((30, 8)) < 0.2
        for k in (1, 2, 3):
            e = select_suite(K, ids(8), ids(30, "m"), budget=k, exact=True)
            g = select_suite(K, ids(8), ids(30, "m"), budget=k, exact=False)
            best = max(covered(K, c) for c in itertools.combinations(range(8), k))
            assert len(e.inputs) <= k and len(e.covered) == best >= len(g.covered)

    def test_duplicates_reduced(self):
        """Equal inputs: the smallest id is kept; seeds that repeat a generator's kills stay cheap."""
        K = np.array([[1, 1, 0], [0, 0, 1]], bool)
        assert exact_cover(K, ["b", "a", "c"]) == ([1, 2], True)
        base = np.random.default_rng(5).random((120, 20)) < 0.15
        K = np.repeat(base, 10, axis=1)                          # 20 generators x 10 seeds
        s = select_suite(K, ids(200), ids(120, "m"), exact=True)
        assert s.optimal and all(int(x[1:]) % 10 == 0 for x in s.inputs)
        assert len(s.inputs) == len(select_suite(base, ids(20), ids(120, "m"), exact=True).inputs)

    def test_time_limit_never_worse_than_greedy(self):
        """A time-limited HiGHS run on a hard instance still covers everything, with no more
        inputs than greedy."""
        K = np.random.default_rng(0).random((150, 300)) < 0.3
        g = select_suite(K, ids(300), ids(150, "m"), exact=False)
        e = select_suite(K, ids(300), ids(150, "m"), exact=True, time_limit_s=0.3)
        assert e.uncovered == g.uncovered == [] and len(e.inputs) <= len(g.inputs)

    def test_budget_prefers_fewer_inputs(self):
        """Extra budget is not spent on inputs that add nothing."""
        K = np.array([[1, 1, 0], [1, 0, 1]], bool)
        assert exact_cover(K, ["a", "b", "c"], budget=3) == ([0], True)

    def test_invalid_inputs_never_chosen(self):
        """valid=False candidates are dropped; mutants only they kill become uncovered."""
        s = select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, valid=[True, False, True])
        assert "b" not in s.inputs and s.uncovered == ["m5"]

    def test_shape_error(self):
        """A matrix of the wrong shape is named with both shapes."""
        with pytest.raises(ValueError, match=r"kill matrix has shape \(6, 3\), expected \(mutants, inputs\) = \(6, 2\)"):
            select_suite(TRAP, ["a", "b"], TRAP_MUTANTS)
        with pytest.raises(ValueError, match="exact must be True, False or 'auto', got 'yes'"):
            select_suite(TRAP, TRAP_INPUTS, TRAP_MUTANTS, exact="yes")


class TestKilledMatrix:
    def test_any_non_survived_outcome_kills(self):
        """Any schedule's killed / memory_fault / sync_error / timeout / crash kills the cell."""
        rows = [{"mutant_id": "m1", "input_id": "a", "outcome": "memory_fault", "schedule": "ascending"},
                {"mutant_id": "m1", "input_id": "b", "outcome": "ok", "schedule": "ascending"},
                {"mutant_id": "m2", "input_id": "b", "outcome": "ok", "schedule": "ascending"},
                {"mutant_id": "m2", "input_id": "b", "outcome": "sync_error", "schedule": "descending"},
                {"mutant_id": "m3", "input_id": "x", "outcome": "wrong", "schedule": "ascending"}]
        K, m, i = killed_matrix(rows, input_ids=["a", "b"])
        assert m == ["m1", "m2", "m3"] and i == ["a", "b"]
        assert K.tolist() == [[True, False], [False, True], [False, False]]


class TestHashSplit:
    def test_stable_and_balanced(self):
        """The split depends only on id and salt, partitions the ids, and is about 50/50."""
        mutants = [f"relu:rule{i}:site{i % 7}" for i in range(4000)]
        sel, held = hash_split(mutants, "s1")
        assert (sel, held) == hash_split(mutants, "s1")
        assert sorted(sel + held) == sorted(mutants) and not set(sel) & set(held)
        assert 0.47 < len(sel) / len(mutants) < 0.53
        assert hash_split(mutants, "s2") != (sel, held)
        assert hash_split(list(reversed(mutants)), "s1")[0] == list(reversed(sel))

    def test_heldout_evaluation(self):
        """A suite chosen on the selection half covers it fully; held-out mutants that only an
        unselected input kills lower the held-out rate."""
        mutants = [f"m{i:03d}" for i in range(200)]
        sel, held = hash_split(mutants, "h")
        K = np.zeros((200, 3), bool)
        for r, m in enumerate(mutants):
            K[r, 0] = r % 2 == 0
            K[r, 1] = r % 2 == 1 or m in held[:10]
            if m in held[10:20]:
                K[r] = [False, False, True]                     # only "c" kills these
        K[mutants.index(sel[0])] = False                        # unwitnessed: in no half
        res = heldout_evaluation(K, ["a", "b", "c"], mutants, salt="h")
        assert res.suite.inputs == ["a", "b"] and res.selection_rate == 1.0
        assert sel[0] not in res.selection
        n_held = len(res.heldout)
        assert res.heldout_rate == pytest.approx((n_held - 10) / n_held)


class TestDetection:
    FAMILY = {"a": "sync", "b": "sync", "c": "precision", "d": "precision", "e": "boundary"}
    PROBLEM = {"a": "relu", "b": "softmax", "c": "softmax", "d": "relu", "e": "relu"}

    def test_rates(self):
        """Overall, per-family and per-problem rates count only witnessed mutants."""
        r = detection_rate({"a", "c", "d", "zz"}, list("abcde"), family_of=self.FAMILY,
                           problem_of=self.PROBLEM)
        assert r.overall == Rate(3, 5) and r.overall.rate == 0.6
        assert r.per_family == {"boundary": Rate(0, 1), "precision": Rate(2, 2), "sync": Rate(1, 2)}
        assert r.per_problem == {"relu": Rate(2, 3), "softmax": Rate(1, 2)}
        assert np.isnan(detection_rate(set(), []).overall.rate)

    def test_missing_group(self):
        """A witnessed mutant without a family is named."""
        with pytest.raises(KeyError, match="mutant 'x' has no entry"):
            detection_rate(set(), ["x"], family_of={})

    def test_bootstrap(self):
        """The interval contains the point estimate, is reproducible by seed, and varies with it."""
        rng = np.random.default_rng(7)
        witnessed = [f"p{p}:m{i}" for p in range(30) for i in range(rng.integers(5, 40))]
        problem_of = {m: m.split(":")[0] for m in witnessed}
        killed = {m for m in witnessed if rng.random() < 0.85}
        point, low, high = bootstrap_interval(killed, witnessed, problem_of, n_boot=1000, seed=1)
        assert point == detection_rate(killed, witnessed).overall.rate
        assert low < point < high and high - low < 0.2
        assert bootstrap_interval(killed, witnessed, problem_of, n_boot=1000, seed=1) == (point, low, high)
        assert bootstrap_interval(killed, witnessed, problem_of, n_boot=1000, seed=2) != (point, low, high)
        with pytest.raises(ValueError, match="no witnessed mutants"):
            bootstrap_interval(set(), [], {})


class TestFillBudget:
    def test_prefers_a_new_kind_and_second_witnesses(self):
        # a:x covers all; a:y repeats it exactly; b:z kills fewer but is another kind
        K = np.array([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 0]], bool)
        ids_ = ["a:x", "a:y", "b:z"]
        assert fill_budget(K, ids_, [0], 2) == [0, 1]
        assert fill_budget(K, ids_, [0], 2, kind=lambda x: x[0]) == [0, 2]

    def test_never_exceeds_budget_and_stops_without_gain(self):
        K = np.array([[1, 0, 0], [0, 1, 0]], bool)
        assert fill_budget(K, ["a", "b", "c"], [0, 1], 2) == [0, 1]
        assert fill_budget(K, ["a", "b", "c"], [0, 1], 5) == [0, 1]        # "c" kills nothing
        assert fill_budget(K, ["a", "b", "c"], [0], 3) == [0]               # "b" is no second witness


def test_exact_cover_prints_nothing():
    """HiGHS's banner (written by the C++ library to fd 1) stays out of mutagym's own output."""
    import subprocess
    import sys
    code = ("import numpy as np\nfrom mutagym.rewards.suites import exact_cover\n"
            "print(exact_cover(np.array([[1, 0, 1], [0, 1, 1]], bool), ['a', 'b', 'c']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "([2], True)\n"
