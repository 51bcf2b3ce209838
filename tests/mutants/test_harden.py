"""Hardening on real kill matrices: suites, tolerance, the saved checker, the pipeline, the CLI."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, run_killmatrix
from mutagym.mutants import harden as harden_mod
from mutagym.rewards.checker import evaluate_source, load_checker
from mutagym.rewards.generators import ORDINARY_GENERATORS
from mutagym.mutants.harden import harden_checker, kill_matrix_for
from mutagym.rewards.scoring import load_killmatrix, score_checker
from mutagym.substrates.catalog import load_problem
from testkit import local_ray, substrate_with

GENERATORS = ("uniform01", "sign_mixed", "large_offset", "negated")



def hand_mutants():
    return [
        MutantRecord("relu-returns-x", "relu", "input_domain", "hand-relu-identity",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")),
        MutantRecord("relu-abs", "relu", "input_domain", "hand-relu-abs",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return fabsf(v);")),
        MutantRecord("relu-times-1.5", "relu", "arithmetic", "hand-scale",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return 1.5f * fmaxf(v, 0.0f);")),
        MutantRecord("relu-plus-0.5", "relu", "arithmetic", "hand-offset",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) + 0.5f;")),
        MutantRecord("softmax-no-max", "softmax", "input_domain", "hand-no-max-subtraction",
                     substrate_with("softmax", "expf(xr[c] - m)", "expf(xr[c])")),
        MutantRecord("softmax-exp2", "softmax", "arithmetic", "hand-exp2",
                     substrate_with("softmax", "expf(xr[c] - m)", "exp2f(xr[c] - m)")),
    ]


@pytest.fixture(scope="module")
def km(tmp_path_factory):
    with local_ray(num_cpus=1):
        out = tmp_path_factory.mktemp("km")
        result = run_killmatrix(hand_mutants(), KillMatrixSettings(
            out=str(out), generators=GENERATORS, presets=("official",), seeds=(0,),
            schedules=("ascending",), preset_generators=None, progress=False))
        yield load_killmatrix(result)


class TestHardenChecker:
    def test_suites_are_small_valid_and_beat_the_presets_on_the_selection_half(self, km):
        result = harden_checker(km, budget=2, date="2026-11-29")
        c = result.checker
        assert set(c.suites) == {"relu", "softmax"}
        for p, suite in c.suites.items():
            ordinary = [r for r in suite if r.generator in ORDINARY_GENERATORS]
            assert 1 <= len(suite) <= 2 + (len(ordinary) == 1) and ordinary   # every suite keeps one
            assert set(c.input_ids_for(p)) <= set(km.valid_inputs[p])
        hardened = score_checker(c, km)
        selection = result.selection
        assert selection
        for name in ("kernelbench", "kernelbench-verified", "sol-execbench", "fuzz"):
            preset = score_checker(load_checker(name), km)
            assert hardened.rate_on(selection) >= preset.rate_on(selection), name
        assert hardened.rate_on(selection) == 1.0
        assert hardened.detection > score_checker(load_checker("kernelbench"), km).detection

    def test_saved_json_reloads_with_the_same_hash(self, km, tmp_path):
        c = harden_checker(km, budget=2, date="2026-11-29").checker
        path = c.save(tmp_path)
        assert path.name == f"hardened-{c.content_hash()[:12]}.json"
        again = load_checker(path)
        assert again.content_hash() == c.content_hash() and again == c
        assert c.provenance["killmatrix_hash"] == km.content_hash()
        other_day = harden_checker(km, budget=2, date="2030-01-01").checker
        assert other_day.content_hash() == c.content_hash()        # the date is not content

    def test_tolerance_tightens_only_with_headroom(self, km):
        """relu is exact (no legitimate error): tightened; every tolerance stays <= the default."""
        result = harden_checker(km, budget=2)
        relu = result.problems["relu"]
        assert relu.legit_need == 0.0 and relu.tol is not None and relu.tol < 1e-2
        for p, ph in result.problems.items():
            cmp = result.checker.comparator_for(p)
            assert cmp.atol <= ph.default_tol[0] and cmp.rtol <= ph.default_tol[1]
            if ph.tol is not None:
                assert ph.legit_need * harden_mod.SAFETY <= ph.tol
        untightened = harden_checker(km, budget=2, tighten=False)
        assert all(ph.tol is None for ph in untightened.problems.values())

    def test_budget_one_and_bad_arguments(self, km):
        r = harden_checker(km, budget=1)
        for s in r.checker.suites.values():     # one input, and an ordinary one beside a targeted one
            assert len(s) == 1 + (s[0].generator not in ORDINARY_GENERATORS)
            assert s[-1].generator in ORDINARY_GENERATORS
        with pytest.raises(ValueError, match="budget must be >= 1"):
            harden_checker(km, budget=0)
        with pytest.raises(ValueError, match=r"problems \['layernorm'\] have no mutants"):
            harden_checker(km, problems=["layernorm"])

    def test_a_suite_without_an_ordinary_input_gets_the_most_killing_one(self):
        """Two targeted inputs cover everything; the ordinary one killing most (official shape
        first) joins them, and a suite that has one gets none."""
        ids = ["p:large_magnitude:official:0", "p:normal:remainder:0", "p:sign_mixed:official:0",
               "p:large_offset:official:0", "p:normal:official:0"]
        K = np.array([[1, 1, 0, 0, 1], [0, 0, 1, 1, 0], [0, 1, 0, 0, 1]], bool)
        assert harden_mod._ordinary_input(K, ids, [ids[0], ids[3]]) == "p:normal:official:0"
        assert harden_mod._ordinary_input(K, ids, [ids[0], ids[2]]) is None
        assert harden_mod._ordinary_input(K, ids[:1], ids[:1]) is None

    def test_leftover_budget_adds_a_second_generator(self, km):
        """A cover smaller than the budget is filled with another generator's input, chosen on the
        selection half only (the held-out half never enters selection)."""
        result = harden_checker(km, budget=2)
        filled = [ph for ph in result.problems.values() if ph.method.endswith("+fill")]
        assert filled
        for ph in filled:
            gens = [x.split(":")[1] for x in ph.suite]
            assert len(ph.suite) == 2 and len(set(gens)) == 2
            assert not set(ph.selection) & set(ph.heldout)

    def test_default_suite_is_taxonomy_guided(self, km):
        """The default inputs open with the most-killing generator x shape, add one pair per family
        that still has mutants alive, never use the false-reject control, and judge a problem
        outside the matrix (rmsnorm) without rejecting its correct kernels."""
        c = harden_checker(km, budget=2).checker
        suite, per_family = harden_mod.taxonomy_suite(km, km.problems)
        assert c.inputs == suite and c.provenance["default_suite"]["per_family"] == per_family
        assert set(per_family) == {km.family_of[m] for m in km.witnessed()}
        assert len(suite) <= 1 + len(per_family)
        assert all(not r.generator.startswith("large_magnitude") for r in suite)
        default_only = c.model_copy(update={"suites": {}, "comparators": {}})
        s = score_checker(default_only, km)
        assert all(r.detected > 0 for r in s.report.per_family.values())
        assert s.detection >= score_checker(load_checker("kernelbench"), km).detection
        assert c.inputs_for("rmsnorm") == suite
        for name, src in load_problem("rmsnorm").kernel_sources().items():
            assert evaluate_source(c, "rmsnorm", src).accepted, name

    def test_kill_matrix_for_matches_witnesses(self, km):
        K, mids, ids = kill_matrix_for(km, "relu")
        witnessed = {m for m, row in zip(mids, K) if row.any()}
        assert witnessed == set(km.witnessed(["relu"]))


def layernorm_affine_mutants():
    """The six wrong affine formulas of SOL-ExecBench issue #25 (seeds/seed-layernorm-affine.txt)."""
    src = load_problem("layernorm").kernel_sources()["substrate"]
    line = "yr[c] = xhat * weight[c] + bias[c];"
    assert line in src
    before = (src.replace("sum += xr[c];", "sum += xr[c] * weight[c] + bias[c];")
                 .replace("const float d = xr[c] - mean;", "const float d = xr[c] * weight[c] + bias[c] - mean;")
                 .replace("const float xhat = (xr[c] - mean) * rstd;",
                          "const float xhat = (xr[c] * weight[c] + bias[c] - mean) * rstd;")
                 .replace(line, "yr[c] = xhat;"))
    assert before.count("weight[c] + bias[c]") == src.count("weight[c] + bias[c]") + 2
    formulas = {
        "omit-both": src.replace(line, "yr[c] = xhat;"),
        "omit-weight": src.replace(line, "yr[c] = xhat + bias[c];"),
        "omit-bias": src.replace(line, "yr[c] = xhat * weight[c];"),
        "element-zero": src.replace(line, "yr[c] = xhat * weight[0] + bias[0];"),
        "affine-twice": src.replace(line, "yr[c] = (xhat * weight[c] + bias[c]) * weight[c] + bias[c];"),
        "affine-before-norm": before,
    }
    return [MutantRecord(f"layernorm-{k}", "layernorm", "arithmetic", f"hand-{k}", v) for k, v in formulas.items()]


@pytest.fixture(scope="module")
def layernorm_hardened(km, tmp_path_factory):
    """A hardened checker from a kill matrix of the six formulas (Ray is up through `km`)."""
    out = tmp_path_factory.mktemp("km_ln")
    result = run_killmatrix(layernorm_affine_mutants(), KillMatrixSettings(
        out=str(out), generators=("uniform01", "identity_affine", "normal", "affine_perturbed"),
        presets=("official",), seeds=(0,), schedules=("ascending",), preset_generators=None, progress=False))
    return harden_checker(load_killmatrix(result), budget=2).checker


class TestLayerNormAffine:
    def test_sol_execbench_accepts_all_six_and_hardened_rejects_them(self, layernorm_hardened):
        sol = load_checker("sol-execbench")
        for m in layernorm_affine_mutants():
            assert evaluate_source(sol, "layernorm", m.source).accepted, m.id
            v = evaluate_source(layernorm_hardened, "layernorm", m.source)
            assert not v.accepted and v.outcome == "wrong", m.id

    def test_correct_kernels_pass_both(self, layernorm_hardened):
        for name, src in load_problem("layernorm").kernel_sources().items():
            for c in (load_checker("sol-execbench"), layernorm_hardened):
                assert evaluate_source(c, "layernorm", src).accepted, (name, c.name)


def mutagym(*args):
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """`mutagym harden` on relu (its whole generated mutant pool), small input set, one CPU."""
    out = tmp_path_factory.mktemp("harden")
    proc = mutagym("harden", "--problems", "relu", "--presets", "official,remainder",
                   "--generators", ",".join(GENERATORS), "--schedules", "ascending", "--num-cpus", "1",
                   "--workers", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc.stdout


class TestHardenPipeline:
    def test_table_report_plots_and_checker(self, pipeline):
        out, stdout = pipeline
        for name in ("kernelbench", "sol-execbench", "fuzz", "hardened", "held-out", "false rejects"):
            assert name in stdout
        report = (out / "report.md").read_text()
        assert "| hardened |" in report and "## Blind band" in report
        assert "Default suite (problems outside the matrix" in report
        for png in ("heatmap.png", "escape_by_family.png", "blind_band.png"):
            assert (out / png).stat().st_size > 1000, png
        [path] = list((out / "checkers").glob("hardened-*.json"))
        c = load_checker(path)
        assert path.stem == c.version_id and c.suites["relu"]

    def test_hardened_detects_more_without_false_rejects(self, pipeline):
        out, _ = pipeline
        km = load_killmatrix(out / "killmatrix")
        [path] = list((out / "checkers").glob("hardened-*.json"))
        hardened = score_checker(load_checker(path), km, check_false_rejects=True)
        kb = score_checker(load_checker("kernelbench"), km)
        assert hardened.false_rejects == []
        assert hardened.detection > kb.detection

    def test_audit_cli(self, pipeline):
        out, _ = pipeline
        proc = mutagym("audit", "kernelbench", "kernelbench-verified", "--killmatrix", str(out / "killmatrix"),
                       "--json")
        assert proc.returncode == 0, proc.stderr
        rec = json.loads(proc.stdout)
        pts = rec["attribution_points"]
        assert math.isclose(pts["inputs"] + pts["tolerance"], pts["gain"], abs_tol=1e-6)
        assert rec["b"]["detected"] >= rec["a"]["detected"]
        for side in (rec["a"], rec["b"]):     # reward a binary reward pays to accepted wrong kernels
            assert side["leaked"] == rec["witnessed"] - side["detected"]
            assert math.isclose(side["leaked_share"], side["leaked"] / rec["witnessed"])
            assert sum(f["leaked"] for f in side["leaked_per_family"].values()) == side["leaked"]
            assert sum(f["leaked"] for f in side["leaked_per_problem"].values()) == side["leaked"]
        assert rec["a"]["leaked"] > 0
        proc = mutagym("audit", "kernelbench", "kernelbench-verified", "--killmatrix", str(out / "killmatrix"))
        assert proc.returncode == 0, proc.stderr
        assert "leaked reward" in proc.stdout and f"{rec['a']['leaked']} (" in proc.stdout
        assert "per fault family" in proc.stdout

    def test_eval_prescreen_flags_a_false_accept(self, pipeline, tmp_path):
        out, _ = pipeline
        good = tmp_path / "good.cu"
        good.write_text(load_problem("relu").kernel_sources()["substrate"])
        bad = tmp_path / "bad.cu"
        bad.write_text(substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;"))
        proc = mutagym("eval", "--checker", "kernelbench", "--problem", "relu", str(good), str(bad),
                       "--prescreen", "--killmatrix", str(out / "killmatrix"), "--json")
        assert proc.returncode == 0, proc.stderr
        recs = {Path(r["kernel"]).name: r for r in json.loads(proc.stdout)}
        assert recs["bad.cu"]["accepted"] and recs["bad.cu"]["false_accept"]
        assert not recs["bad.cu"]["pool_accepted"] and not recs["bad.cu"]["false_reject"]
        assert recs["good.cu"]["pool_accepted"] and not recs["good.cu"]["false_accept"]
        assert recs["bad.cu"]["prescreen"]["nearest_mutant"]["family"]      # signatures from the matrix

    def test_harden_json(self, pipeline):
        """A rerun resumes everything and prints JSON."""
        out, _ = pipeline
        proc = mutagym("harden", "--problems", "relu", "--presets", "official,remainder",
                       "--generators", ",".join(GENERATORS), "--schedules", "ascending", "--num-cpus", "1",
                       "--workers", "1", "--out", str(out), "--json", "--no-false-rejects")
        assert proc.returncode == 0, proc.stderr[-3000:]
        rec = json.loads(proc.stdout)
        rows = {r["checker"]: r for r in rec["checkers"]}
        assert rows["hardened"]["selection"] == 1.0 and rows["hardened"]["false_rejects"] is None
        # the matrix ran every scored checker's own inputs, though --generators names none of
        # sol-execbench's or kernelbench-verified's: every row is measured, none scored on a part
        assert {name: (r["measured"], r["missing_inputs"]) for name, r in rows.items()} == {
            name: (True, 0) for name in rows}
        assert rows["sol-execbench"]["detection"] is not None and rows["sol-execbench"]["median_inputs"] == 10
        assert {"mutant pool", "kill matrix", "suites, false rejects, scores", "report"} <= set(rec["stage_seconds"])
        assert rec["hardened"]["relu"]["suite"]


class TestEvalCli:
    def test_verdicts_json(self, tmp_path):
        good = tmp_path / "good.cu"
        good.write_text(load_problem("relu").kernel_sources()["substrate"])
        bad = tmp_path / "bad.cu"
        bad.write_text(substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;"))
        proc = mutagym("eval", "--checker", "kernelbench-verified", "--problem", "relu", str(good), str(bad),
                       "--json")
        assert proc.returncode == 1, proc.stderr
        recs = json.loads(proc.stdout)
        assert [(r["kernel"], r["accepted"], r["outcome"]) for r in recs] == [
            (str(good), True, "ok"), (str(bad), False, "wrong")]
        assert all(r["problem"] == "relu" and r["checker"].startswith("kernelbench-verified-") for r in recs)
        proc = mutagym("eval", "--checker", "kernelbench", "--problem", "relu", str(bad))
        assert proc.returncode == 0 and "accept" in proc.stdout

    def test_unknown_checker(self, tmp_path):
        k = tmp_path / "k.cu"
        k.write_text(load_problem("relu").kernel_sources()["substrate"])
        proc = mutagym("eval", "--checker", "kernelbnch", "--problem", "relu", str(k))
        assert proc.returncode != 0 and "did you mean 'kernelbench'" in proc.stderr


def test_doctests():
    import doctest
    from mutagym.rewards import report
    for mod in (harden_mod, report):
        assert doctest.testmod(mod).failed == 0
