"""Checker versions: presets, hashing, files, and verdicts on the real CPU runtime."""

import doctest
import json

import numpy as np
import pytest

import mutagym.rewards.checker as checker_module
from mutagym.rewards.checker import (CheckerError, CheckerVersion, ComparatorSpec, InputRef,
                                     UnknownCheckerError, crossed, evaluate, evaluate_source,
                                     default_checker, default_checker_name, list_checkers, load_checker)
from mutagym.runtime import RunResult
from mutagym.substrates.catalog import load_problem

PRESETS = ["fuzz", "kernelbench", "kernelbench-verified", "sol-execbench"]


def relu_source(op: str = "fmaxf(v, 0.0f)") -> str:
    """relu's substrate with its ReLU operation replaced by `op`."""
    source = load_problem("relu").kernel_sources()["substrate"]
    assert "fmaxf(v, 0.0f)" in source
    return source.replace("fmaxf(v, 0.0f)", op)


def with_sign_mixed(base: CheckerVersion) -> CheckerVersion:
    return base.model_copy(update={"name": "kernelbench-signmixed",
                                   "inputs": base.inputs + [InputRef(generator="sign_mixed", seed=0)]})


def test_docstrings_run():
    """The module's doctests pass."""
    assert doctest.testmod(checker_module).failed == 0


class TestPresets:
    def test_list(self):
        """Every preset TOML and the committed hardened checker in configs/checkers are listed."""
        assert list_checkers() == sorted(PRESETS + [default_checker_name()])

    def test_default_is_the_committed_catalog_checker(self):
        """The default checker is the hardened one built from the whole catalog's kill matrix."""
        from mutagym.substrates.catalog import list_problems
        default = load_checker("default")
        assert default == default_checker() and default.name == "hardened"
        assert default.version_id == default_checker_name()
        # built from every problem of the catalog: a problem added later needs a rebuild
        assert sorted(default.suites) == sorted(default.provenance["problems"]) == sorted(list_problems())
        for suite in default.suites.values():   # a budget of 2, and an ordinary input in every suite
            assert 1 <= len(suite) <= 3 and any(r.generator in ("normal", "sign_mixed") for r in suite)
        assert default.inputs and default.provenance["killmatrix_hash"]

    @pytest.mark.parametrize("name", PRESETS)
    def test_load_and_fields(self, name):
        """Each preset loads with a name, description, source, inputs and a comparator."""
        c = load_checker(name)
        assert c.name == name and c.description and c.source
        assert c.inputs and all(r.preset == "official" for r in c.inputs)
        assert c.version_id == f"{name}-{c.content_hash()[:12]}"

    def test_published_protocols(self):
        """The presets reproduce ANCHORS.md's checker table."""
        kb, kbv, sol, fuzz = (load_checker(n) for n in
                              ("kernelbench", "kernelbench-verified", "sol-execbench", "fuzz"))
        assert [(r.generator, r.seed) for r in kb.inputs] == [("uniform01", s) for s in range(5)]
        assert kb.comparator == ComparatorSpec(atol=1e-2, rtol=1e-2, matched_ratio=1.0)
        assert {r.generator for r in kbv.inputs} == {"uniform01", "scaled_x3", "scaled_x0_01", "negated"}
        assert set(kb.inputs) <= set(kbv.inputs) and len(kbv.inputs) == 20
        assert (kbv.comparator.atol, kbv.comparator.rtol) == (1e-3, 1e-3)
        assert {r.generator for r in sol.inputs} == {"identity_affine"}
        assert sol.comparator == ComparatorSpec(atol=1e-2, rtol=1e-2, matched_ratio=0.99, nan_matches=False)
        assert {r.generator.partition("*")[0] for r in fuzz.inputs} == {"uniform01", "large_magnitude"}
        scales = [float(r.generator.partition("*")[2] or 1) for r in fuzz.inputs if r.generator != "uniform01"]
        assert scales == [1, 1e4, 1e8, 1e12, 1e16]        # a magnitude sweep up to 10^20
        assert set(kb.inputs) <= set(fuzz.inputs) and fuzz.comparator.atol == 1e-2

    def test_unknown_name_suggests(self):
        """An unknown preset name gets a "did you mean" and the known list."""
        with pytest.raises(UnknownCheckerError, match=r"unknown checker 'kernelbench-verifed'; did you "
                           r"mean 'kernelbench-verified'\? Known checkers: fuzz, hardened-"):
            load_checker("kernelbench-verifed")

    def test_unknown_path(self, tmp_path):
        """A missing checker file is named."""
        with pytest.raises(UnknownCheckerError, match="no checker file at .*nothing.json"):
            load_checker(tmp_path / "nothing.json")


class TestHashAndFiles:
    def test_roundtrip_json(self, tmp_path):
        """save -> load gives an equal checker and the same hash; the file name holds the hash."""
        for name in PRESETS:
            c = load_checker(name)
            path = c.save(tmp_path)
            assert path.name == f"{c.version_id}.json"
            back = load_checker(path)
            assert back == c and back.content_hash() == c.content_hash()
            assert load_checker(str(path)) == c

    def test_same_content_same_hash(self):
        """Two loads, and a rebuilt copy, hash alike; the provenance date is not content."""
        a, b = load_checker("sol-execbench"), load_checker("sol-execbench")
        assert a.content_hash() == b.content_hash()
        rebuilt = CheckerVersion.model_validate(json.loads(a.model_dump_json()))
        assert rebuilt.content_hash() == a.content_hash()
        dated = a.model_copy(update={"provenance": {"date": "2026-11-29T16:00:00Z"}})
        assert dated.content_hash() == a.content_hash()

    @pytest.mark.parametrize("change", [
        {"name": "kb2"}, {"description": "other"}, {"source": "other"},
        {"comparator": ComparatorSpec(atol=1e-2, rtol=1e-3)},
        {"comparator": ComparatorSpec(atol=1e-2, rtol=1e-2, nan_matches=True)},
        {"inputs": [InputRef(generator="uniform01", seed=s) for s in (0, 1, 2, 3, 5)]},
        {"inputs": [InputRef(generator="uniform01", seed=s) for s in (4, 3, 2, 1, 0)]},
        {"suites": {"relu": [InputRef(generator="sign_mixed")]}},
        {"comparators": {"relu": ComparatorSpec(atol=1e-3, rtol=1e-3)}},
        {"provenance": {"kill_matrix": "abc123"}},
    ])
    def test_any_change_new_hash(self, change):
        """Any content change gives a new hash."""
        kb = load_checker("kernelbench")
        assert kb.model_copy(update=change).content_hash() != kb.content_hash()

    def test_edited_file_rejected(self, tmp_path):
        """A saved file whose content no longer matches its hash is refused."""
        path = load_checker("kernelbench").save(tmp_path)
        data = json.loads(path.read_text())
        data["comparator"]["atol"] = 0.5
        path.write_text(json.dumps(data))
        with pytest.raises(CheckerError, match="does not match the content"):
            load_checker(path)

    def test_toml_overrides(self, tmp_path):
        """A TOML checker may give per-problem suites and comparators."""
        path = tmp_path / "mine.toml"
        path.write_text('name = "mine"\n[[inputs]]\ngenerator = "normal"\nseeds = [0, 1]\n'
                        '[comparator]\natol = 1e-2\nrtol = 1e-2\n'
                        '[[suites.relu]]\ngenerator = "sign_mixed"\npreset = "remainder"\nseed = 7\n'
                        '[comparators.relu]\natol = 1e-4\nrtol = 0\n')
        c = load_checker(path)
        assert c.input_ids_for("relu") == ["relu:sign_mixed:remainder:7"]
        assert c.input_ids_for("softmax") == ["softmax:normal:official:0", "softmax:normal:official:1"]
        assert c.comparator_for("relu").atol == 1e-4 and c.comparator_for(load_problem("softmax")).atol == 1e-2

    def test_bad_generator_named(self, tmp_path):
        """An unknown generator in a checker file is named, with a suggestion."""
        path = tmp_path / "bad.toml"
        path.write_text('name = "bad"\n[[inputs]]\ngenerator = "sign_mixd"\n[comparator]\natol = 0\nrtol = 0\n')
        with pytest.raises(CheckerError, match=r"inputs\.0\.generator: .*unknown generator 'sign_mixd'; "
                           r"did you mean 'sign_mixed'\?"):
            load_checker(path)

    def test_no_inputs_refused(self):
        """A checker without any suite is refused."""
        with pytest.raises(ValueError, match="has no inputs"):
            CheckerVersion(name="empty", comparator=ComparatorSpec(atol=0, rtol=0))

    def test_crossed(self):
        """crossed() takes one checker's suites and the other's comparators."""
        kb, kbv = load_checker("kernelbench"), load_checker("kernelbench-verified")
        x = crossed(kb, kbv)
        assert x.inputs == kb.inputs and x.comparator == kbv.comparator
        assert x.provenance["inputs_from"] == kb.version_id


class TestEvaluate:
    def test_run_fn_outputs_and_faults(self):
        """evaluate() takes outputs dicts or RunResults; a fault outranks a wrong answer."""
        kb = load_checker("kernelbench")
        calls = []

        def run(g):
            calls.append(g.id)
            if g.seed == 3:
                return RunResult("memory_fault", message="read past x")
            if g.seed == 1:
                return {"out": np.zeros_like(g.inputs["x"])}
            return RunResult("ok", {"out": np.maximum(g.inputs["x"], 0)})

        v = evaluate(kb, "relu", run)
        assert calls == kb.input_ids_for("relu")
        assert not v.accepted and v.outcome == "memory_fault"
        assert [i.passed for i in v.inputs] == [True, False, True, False, True]
        assert v.message == "input relu:uniform01:official:3: memory_fault: read past x"
        assert v.checker == kb.version_id and v.problem == "relu"

    def test_substrate_accepted(self):
        """relu's own substrate passes kernelbench and a sign-mixed checker."""
        kb = load_checker("kernelbench")
        for c in (kb, with_sign_mixed(kb)):
            v = evaluate_source(c, "relu", relu_source())
            assert v.accepted and v.outcome == "ok", v.message
            assert [i.input_id for i in v.inputs] == c.input_ids_for("relu")
            assert all(i.passed and i.max_abs == 0.0 for i in v.inputs)

    @pytest.mark.parametrize("name", [n for n in PRESETS if n != "fuzz"])
    def test_layernorm_substrate_accepted_by_every_preset(self, name):
        """A correct LayerNorm passes every preset but the fuzz control at the official shape
        (small fp32 error)."""
        p = load_problem("layernorm")
        v = evaluate_source(load_checker(name), p, p.kernel_sources()["substrate"])
        assert v.accepted, v.message
        assert 0 < max(i.max_abs for i in v.inputs) < 1e-4

    def test_fuzz_rejects_the_correct_layernorm_only_at_its_largest_magnitude(self):
        """The false-reject control: values of 10^19..10^20 overflow the fp32 sum of squares."""
        p = load_problem("layernorm")
        v = evaluate_source(load_checker("fuzz"), p, p.kernel_sources()["substrate"])
        assert not v.accepted and v.outcome == "wrong"
        assert [i.input_id for i in v.inputs if not i.passed] == ["layernorm:large_magnitude*1e+16:official:4"]

    def test_deleted_relu(self):
        """ReLU returning x: kernelbench (inputs in [0, 1)) accepts; sign-mixed inputs and
        KernelBench-Verified's negated copies reject it."""
        source = relu_source("v")
        kb = load_checker("kernelbench")
        assert evaluate_source(kb, "relu", source).accepted
        v = evaluate_source(with_sign_mixed(kb), "relu", source)
        assert not v.accepted and v.outcome == "wrong"
        assert [i.passed for i in v.inputs] == [True] * 5 + [False]
        assert v.inputs[-1].input_id == "relu:sign_mixed:official:0" and v.inputs[-1].max_abs > 0.5
        assert v.message.startswith("input relu:sign_mixed:official:0: output 'out': ")
        v = evaluate_source(load_checker("kernelbench-verified"), "relu", source)
        assert not v.accepted
        assert {i.input_id.split(":")[1] for i in v.inputs if not i.passed} == {"negated"}

    def test_compile_error(self):
        """A submission that does not build is rejected with outcome compile_error."""
        v = evaluate_source(load_checker("kernelbench"), "relu", relu_source("undefined_fn(v)"))
        assert not v.accepted and v.outcome == "compile_error"
        assert v.message.startswith("compile_error: ") and len(v.inputs) == 5

    def test_scaled_input_ref(self):
        """A `name*scale` generator rebuilds the validity ceiling's scaled input with the same id."""
        p = load_problem("relu")
        ref = InputRef(generator="sign_mixed*300", preset="tiny", seed=2)
        g = ref.generate(p)
        assert g.id == ref.id_for(p) == "relu:sign_mixed*300:tiny:2"
        base = InputRef(generator="sign_mixed", preset="tiny", seed=2).generate(p)
        np.testing.assert_allclose(g.inputs["x"], base.inputs["x"] * 300, rtol=1e-6)
        with pytest.raises(ValueError, match="scale 'x' is not a number"):
            InputRef(generator="sign_mixed*x")
