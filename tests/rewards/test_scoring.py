"""Scoring checker versions on a small real kill matrix (real g++, real Ray)."""

import json
import math
import subprocess
import sys

import pytest

from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, run_killmatrix
from mutagym.rewards import scoring
from mutagym.rewards.checker import CheckerVersion, ComparatorSpec, InputRef, load_checker
from mutagym.rewards.scoring import (attribute_checkers, cell_killed, false_rejects, kill_rule,
                                     killed_by, load_killmatrix, score_checker)
from mutagym.rewards.comparator import Comparator
from mutagym.substrates.catalog import load_problem
from testkit import local_ray, substrate_with

GENERATORS = ("uniform01", "sign_mixed", "large_offset", "negated")



def hand_mutants():
    """Classic blind spots of U[0, 1) inputs plus one fault every checker sees."""
    return [
        MutantRecord("relu-returns-x", "relu", "input_domain", "hand-relu-identity",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")),
        MutantRecord("relu-times-1.5", "relu", "arithmetic", "hand-scale",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return 1.5f * fmaxf(v, 0.0f);")),
        MutantRecord("relu-plus-5e-3", "relu", "precision", "hand-small-offset",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) + 5e-3f;")),
        MutantRecord("softmax-no-max", "softmax", "input_domain", "hand-no-max-subtraction",
                     substrate_with("softmax", "expf(xr[c] - m)", "expf(xr[c])")),
    ]


@pytest.fixture(scope="module")
def km(tmp_path_factory):
    """One kill matrix for the module: 4 mutants x 4 generators at the official shape, 2 seeds."""
    with local_ray(num_cpus=1):
        out = tmp_path_factory.mktemp("km")
        yield run_killmatrix(hand_mutants(), KillMatrixSettings(
            out=str(out), generators=GENERATORS, presets=("official",), seeds=(0, 1),
            schedules=("ascending",), preset_generators=None, progress=False))


def targeted_checker():
    """kernelbench's uniform inputs plus sign-mixed and large-offset ones, same tolerance."""
    return CheckerVersion(name="targeted", inputs=[
        InputRef(generator="uniform01"), InputRef(generator="sign_mixed"),
        InputRef(generator="large_offset")], comparator=ComparatorSpec(atol=1e-2, rtol=1e-2))


class TestLoadKillmatrix:
    def test_folder_and_result_agree(self, km):
        """Reading the folder gives the same tables and hash as the in-memory result."""
        a, b = load_killmatrix(km.out), load_killmatrix(km)
        assert a.witnessed() == b.witnessed()
        assert a.content_hash() == b.content_hash()
        assert a.valid_inputs == b.valid_inputs
        assert "relu:sign_mixed:official:0" in a.valid_inputs["relu"]

    def test_missing_folder_names_the_table(self, tmp_path):
        with pytest.raises(FileNotFoundError, match="mutants.parquet not found"):
            load_killmatrix(tmp_path)


class TestKillRule:
    def test_rules(self):
        """atol == rtol is exact; matched ratio 0.99 reads the p99 column."""
        assert kill_rule(Comparator(1e-3, 1e-3)) == ("tol_needed", 1e-3, True)
        assert kill_rule(Comparator(1e-2, 1e-2, 0.99)) == ("tol_needed_p99", 1e-2, True)
        assert kill_rule(Comparator(1e-3, 1e-2))[2] is False

    def test_agrees_with_the_matrix_verdict_at_the_default_tolerance(self, km):
        """tol_needed > t reproduces the matrix's own killed / survived at the problem tolerance."""
        m = load_killmatrix(km)
        checked = 0
        for r in m.outcomes:
            if r["outcome"] not in ("wrong", "ok"):
                continue
            problem = m.problem_of[r["mutant_id"]]
            t = load_problem(problem).spec.tolerance
            column, thr, exact = kill_rule(Comparator(t.atol, t.rtol, t.matched_ratio))
            assert exact
            assert cell_killed(r, column, thr) == (r["outcome"] == "wrong"), r
            checked += 1
        assert checked > 10

    def test_faults_always_kill_and_build_errors_never(self):
        assert cell_killed({"outcome": "sync_error"}, "tol_needed", 1e9)
        assert not cell_killed({"outcome": "compile_error"}, "tol_needed", 0.0)


class TestScoreChecker:
    def test_kernelbench_misses_the_input_domain_blind_spots(self, km):
        """U[0, 1) inputs cannot see relu returning x or softmax without max-subtraction."""
        kb = score_checker(load_checker("kernelbench"), km)
        tg = score_checker(targeted_checker(), km)
        assert set(kb.witnessed) == set(tg.witnessed) >= {"relu-returns-x", "relu-times-1.5", "softmax-no-max"}
        assert "relu-returns-x" in kb.escaped and "softmax-no-max" in kb.escaped
        assert "relu-times-1.5" in kb.killed
        assert kb.report.overall.detected < tg.report.overall.detected
        assert tg.escaped == [m for m in tg.witnessed if m == "relu-plus-5e-3"] or not tg.escaped
        assert kb.report.per_family["input_domain"].detected == 0
        point, low, high = kb.interval
        assert low <= point <= high and point == kb.detection

    def test_missing_inputs_are_reported(self, km):
        """kernelbench's seeds 2..4 were not run: listed as missing, so the score is not measured
        (what seeds 0 and 1 kill is a lower bound, which no summary shows as a rate)."""
        kb = score_checker(load_checker("kernelbench"), km)
        assert kb.inputs_used["relu"] == ["relu:uniform01:official:0", "relu:uniform01:official:1"]
        assert "relu:uniform01:official:4" in kb.missing_inputs["relu"]
        assert not kb.measured and score_checker(targeted_checker(), km).measured
        d = kb.as_dict()
        assert d["measured"] is False and d["detection"] is None and d["per_family"] is None

    def test_tighter_tolerance_kills_the_small_offset(self, km):
        """A 5e-3 offset passes 1e-2 (so it is not witnessed) but not 1e-3: re-scored from tol_needed."""
        m = load_killmatrix(km)
        assert "relu-plus-5e-3" not in m.witnessed()
        tight = targeted_checker().model_copy(update={"comparator": ComparatorSpec(atol=1e-3, rtol=1e-3)})
        assert "relu-plus-5e-3" in killed_by(tight, m)
        assert "relu-plus-5e-3" not in killed_by(targeted_checker(), m)
        assert killed_by(targeted_checker(), m) <= killed_by(tight, m)

    def test_as_dict_is_json(self, km):
        import json
        d = score_checker(load_checker("sol-execbench"), km).as_dict()
        json.dumps(d, allow_nan=False)
        assert d["witnessed"] >= 3


class TestAttribution:
    def test_gain_splits_into_inputs_and_tolerance(self, km):
        a = attribute_checkers(load_checker("kernelbench"), load_checker("kernelbench-verified"), km)
        pts = a.points()
        assert math.isclose(pts["inputs"] + pts["tolerance"], pts["gain"], abs_tol=1e-6)
        assert pts["gain"] > 0


class TestFalseRejects:
    def test_presets_accept_the_correct_relu_kernels(self):
        rejects, checked = false_rejects(load_checker("kernelbench"), ["relu"])
        assert checked == 1 + len(load_problem("relu").variant_names) and rejects == []

    def test_fuzz_rejects_correct_layernorm_kernels_at_its_largest_magnitude(self):
        """The false-reject control: every correct LayerNorm fails the 10^19..10^20 fuzz input
        (an fp32 sum of squares overflows), while the official inputs alone pass them all."""
        runs = scoring.CorrectRuns()
        fuzz, kb = load_checker("fuzz"), load_checker("kernelbench")
        runs.prepare([fuzz, kb], ["layernorm"])
        rejects, checked = runs.false_rejects(fuzz, ["layernorm"])
        kernels = set(load_problem("layernorm").kernel_sources())
        assert checked == len(kernels) and {r.kernel for r in rejects} == kernels
        assert all("large_magnitude*1e+16" in r.message for r in rejects)
        assert runs.false_rejects(kb, ["layernorm"]) == ([], len(kernels))

    def test_shared_runs_agree_with_fresh_ones(self):
        """A tighter comparator judged on shared runs gives the verdicts of a fresh evaluation."""
        tight = CheckerVersion(name="tight", inputs=[InputRef(generator="normal")],
                               comparator=ComparatorSpec(atol=1e-9, rtol=1e-9))
        runs = scoring.CorrectRuns()
        runs.prepare([load_checker("kernelbench"), tight], ["softmax"])
        shared = runs.false_rejects(tight, ["softmax"])
        fresh = false_rejects(tight, ["softmax"])
        assert shared == fresh and shared[0]            # 1e-9 rejects fp32 softmax kernels


class TestLeakedReward:
    def test_binary_reward_leaked_to_accepted_mutants(self, km):
        s = score_checker(load_checker("kernelbench"), km)
        leak = s.leaked_reward()
        assert leak["leaked"] == len(s.escaped) > 0
        assert leak["witnessed"] == len(s.witnessed)
        assert math.isclose(leak["share"], 1 - s.detection)
        assert sum(v["leaked"] for v in leak["per_family"].values()) == leak["leaked"]
        assert leak["per_family"]["input_domain"]["leaked"] >= 1      # relu-returns-x on U[0, 1)
        assert sum(v["witnessed"] for v in leak["per_problem"].values()) == leak["witnessed"]


def test_doctests():
    import doctest
    result = doctest.testmod(scoring)
    assert result.failed == 0 and result.attempted > 0


class TestAuditNotMeasured:
    def test_a_checker_the_matrix_lacks_inputs_of_has_no_figure(self, km):
        """`mutagym audit` on a matrix without kernelbench's seeds 2..4: kernelbench is not
        measured (no detection, no leak, no split of the gain), never 'detects less'."""
        proc = subprocess.run([sys.executable, "-m", "mutagym", "audit", "kernelbench", "kernelbench-verified",
                               "--killmatrix", str(km.out), "--json"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rec = json.loads(proc.stdout)
        assert rec["a"] == {"checker": rec["a"]["checker"], "measured": False,
                            "missing_inputs": {"relu": [f"relu:uniform01:official:{s}" for s in (2, 3, 4)],
                                               "softmax": [f"softmax:uniform01:official:{s}" for s in (2, 3, 4)]}}
        assert rec["attribution_points"] is None and rec["accepted_by_a_only"] is None
        proc = subprocess.run([sys.executable, "-m", "mutagym", "audit", "kernelbench", "kernelbench-verified",
                               "--killmatrix", str(km.out)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "not measured" in proc.stdout and "gain of B over A" not in proc.stdout
