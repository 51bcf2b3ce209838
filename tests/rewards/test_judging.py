"""The judging core: one outcome vocabulary, refused launches isolated per input, one reference
cache, on the real CPU runtime with catalog kernels."""

import doctest
import json
import subprocess
import sys
from dataclasses import replace

import numpy as np

import mutagym.rewards.judging as judging
from mutagym.rewards.checker import InputRef, evaluate_source, load_checker
from mutagym.rewards.generators import generate
from mutagym.rewards.input_cache import InputCache
from mutagym.rewards.judging import (KERNEL_FAULTS, OUTCOMES, comparator_for, judge_kernel, shared_cache)
from mutagym.rewards.validity import check_validity
from mutagym.runtime import RunCase, compile
from mutagym.substrates.catalog import load_problem

RELU = load_problem("relu")
SUBSTRATE = RELU.kernel_sources()["substrate"]
#: one block per 4096 elements, no grid-stride loop: for n < 4096 the grid is 0, a launch no GPU takes
SMALL_GRID = SUBSTRATE.replace('grid = ["min(ceil_div(n, 1024), 1024)"]', 'grid = ["n // 4096"]')
OUT_OF_BOUNDS = SUBSTRATE.replace("out[i] = relu_op(x[i]);", "out[i + 64] = relu_op(x[i]);")
IDENTITY = SUBSTRATE.replace("return fmaxf(v, 0.0f);", "return v;")


def test_docstrings_run():
    assert doctest.testmod(judging).failed == 0


def test_vocabulary_separates_kernel_faults_from_mutagyms_failures():
    """Every outcome but `ok` is the kernel's fault; mutagym's own failure is not an outcome."""
    assert OUTCOMES[0] == "ok" and set(OUTCOMES[1:]) == set(KERNEL_FAULTS)
    assert {"wrong", "source_error", "compile_error", "launch_error", "memory_fault", "sync_error",
            "timeout"} <= set(KERNEL_FAULTS)
    assert judging.INFRA_ERROR not in OUTCOMES


def test_a_refused_launch_fails_only_the_inputs_it_is_refused_for():
    """n // 4096 blocks: the tiny input gets no block at all (`launch_error`), the official one
    (n = 2^20) launches and is judged; both orders report it."""
    kernel = compile(SMALL_GRID, backend="cpu")
    inputs = [generate(RELU, "sign_mixed", preset="tiny"), generate(RELU, "sign_mixed", preset="official")]
    judged = judge_kernel(kernel, RELU, inputs, comparator_for(RELU), ("ascending", "descending"))
    for schedule, (tiny, official) in judged.items():
        assert tiny.outcome == "launch_error" and not tiny.outputs and tiny.schedule == schedule
        assert official.outcome == "ok" and official.passed


def test_a_wrong_answer_is_wrong_everywhere():
    """The same vocabulary from the core, the checker's per-input verdicts and the validity gate."""
    g = generate(RELU, "sign_mixed", preset="remainder")
    [case] = judge_kernel(compile(IDENTITY, backend="cpu"), RELU, [g], comparator_for(RELU))["ascending"]
    assert case.outcome == "wrong" and "output 'out'" in case.message and case.max_abs > 0
    verdict = evaluate_source(load_checker("kernelbench-verified"), RELU, IDENTITY)
    assert verdict.outcome == "wrong"
    assert {v.outcome for v in verdict.inputs if not v.passed} == {"wrong"}


def test_faults_and_build_failures_are_named():
    g = generate(RELU, "sign_mixed", preset="remainder")
    [case] = judge_kernel(compile(OUT_OF_BOUNDS, backend="cpu"), RELU, [g], comparator_for(RELU))["ascending"]
    assert case.outcome == "memory_fault" and case.message.startswith("memory_fault: ")
    checker = load_checker("kernelbench")
    assert evaluate_source(checker, RELU, "__global__ void k() {}").outcome == "source_error"
    assert evaluate_source(checker, RELU, SUBSTRATE.replace("fmaxf", "fmaxf_typo")).outcome == "compile_error"


def test_measured_outputs_carry_the_kill_matrix_statistics():
    g = generate(RELU, "sign_mixed", preset="remainder")
    [case] = judge_kernel(compile(IDENTITY, backend="cpu"), RELU, [g], comparator_for(RELU),
                          measure=True)["ascending"]
    assert case.tol_needed > 0.01 and case.tol_needed_p99 > 0
    [plain] = judge_kernel(compile(IDENTITY, backend="cpu"), RELU, [g], comparator_for(RELU))["ascending"]
    assert plain.tol_needed is None


def test_outputs_judged_before_are_not_compared_again_and_other_outputs_are():
    """A kill-matrix worker's `JudgedOutputs`: a kernel whose output is bitwise one judged before
    (the substrate's, by a mutant that does not touch this input's path) gets that judgement; a
    kernel with other output bytes on the same input id is judged for itself."""
    g = generate(RELU, "sign_mixed", preset="remainder")
    ids, cases = [g.id], [RunCase(g.inputs, RELU.output_specs(g.dims), g.dims, RELU.scalar_values())]
    refs, comparator = [shared_cache().reference(RELU, g)], comparator_for(RELU)
    seen = judging.JudgedOutputs()

    def judged(source):
        return judging.judge_cases(compile(source, backend="cpu"), ids, cases, refs, comparator,
                                   ("ascending", "descending"), measure=True, seen=seen)

    first = judged(SUBSTRATE)["ascending"][0]
    out = {"out": np.maximum(g.inputs["x"], 0)}
    assert first.outcome == "ok" and seen.find(g.id, out) == first
    assert seen.find(g.id, {"out": np.nextafter(out["out"], 1)}) is None   # one ulp off: not the same bytes
    again = judged(SUBSTRATE.replace("return fmaxf(v, 0.0f);", "return v > 0.0f ? v : 0.0f;"))
    assert again["ascending"][0] == first and again["descending"][0] == replace(first, schedule="descending")
    wrong = judged(IDENTITY)["ascending"][0]
    assert wrong.outcome == "wrong" and wrong.max_abs > 0
    assert seen.find(g.id, out) == first    # two kept per input: the substrate's is still there


def test_one_reference_cache_keyed_by_input_id():
    """A reference is computed once per input id; arrays that are not the id's get their own."""
    cache = InputCache()
    g, ref = cache.get(RELU, InputRef(generator="sign_mixed", preset="tiny"))
    assert cache.reference(RELU, g) is ref
    forged = type(g)(**{**vars(g), "inputs": {"x": -np.abs(g.inputs["x"])}})
    assert not np.array_equal(cache.reference(RELU, forged)["out"], ref["out"])
    assert (cache.reference(RELU, forged)["out"] == 0).all()
    # the validity gate and the checker take their references from the shared cache
    shared = shared_cache().reference(RELU, g)
    assert check_validity(RELU, [g])[0].valid and shared_cache().reference(RELU, g) is shared


def test_mutagym_run_reports_the_same_outcome(tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text(SMALL_GRID)
    proc = subprocess.run([sys.executable, "-m", "mutagym.cli", "run", str(kernel), "--problem", "relu",
                           "--shape", "tiny", "--backend", "cpu", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    record = json.loads(proc.stdout)
    assert record["outcome"] == "launch_error" and not record["passed"]
