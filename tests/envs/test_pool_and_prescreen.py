"""Pools of record (from a real kill matrix and from the validity gate), the Ray judging pool,
and the examples in the envs modules' docstrings."""

import doctest
import gzip
import importlib
import json
import os
import signal

import pytest

from mutagym.envs.judge import Judge
from mutagym.envs.pool import (PoolRegistry, coverage_inputs, gated_pool, load_pools, pools_from_killmatrix,
                               save_pools)
from mutagym.envs.prescreen import JudgePool, WorkTimeout
from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, candidate_inputs, run_killmatrix
from mutagym.rewards.checker import load_checker
from mutagym.rewards.input_cache import InputCache
from mutagym.substrates.catalog import load_problem
from testkit import substrate_with

RELU = load_problem("relu").kernel_sources()["substrate"]
IDENTITY = substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")
SHIFT = substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) + 1.0f;")
TAIL = substrate_with("relu", "out[i] = relu_op(x[i]);", "out[i] = relu_op(x[i + 4]);")


@pytest.mark.parametrize("name", ["envs.pool", "envs.fresh_seeds", "envs.kernel_task", "envs.judge",
                                  "rewards.input_cache"])
def test_docstring_examples(name):
    module = importlib.import_module(f"mutagym.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


@pytest.fixture(scope="module")
def relu_pool_file(tmp_path_factory):
    """A pool file written from a real (small) kill matrix of three relu mutants."""
    out = tmp_path_factory.mktemp("km")
    mutants = [MutantRecord("relu-identity", "relu", "input_domain", "drop-relu", IDENTITY),
               MutantRecord("relu-shift", "relu", "arithmetic", "add-one", SHIFT),
               MutantRecord("relu-tail", "relu", "boundary", "tail-oob", TAIL)]
    run_killmatrix(mutants, KillMatrixSettings(out=str(out / "km"), generators=("uniform01", "sign_mixed",
                                                                                   "negative_heavy"),
                                               presets=("tiny", "official"), preset_generators=None,
                                               progress=False, num_cpus=2))
    path = save_pools(pools_from_killmatrix(out / "km"), out / "pools.json.gz")
    return path


def test_pool_file_round_trips_and_is_deterministic(relu_pool_file, tmp_path):
    pools = load_pools(relu_pool_file)
    relu = pools["relu"]
    assert relu.origin.startswith("killmatrix:") and relu.schedules == ("ascending", "descending")
    assert "relu:sign_mixed:official:0" in relu.input_ids
    assert "relu:uniform01:tiny:0" in relu.input_ids
    by_id = {m.id: m for m in relu.mutants}
    assert by_id["relu-identity"].rule == "drop-relu"
    assert not any("uniform01" in i for i in by_id["relu-identity"].kills)   # [0, 1) hides it
    again = save_pools(pools, tmp_path / "again.json.gz")
    assert again.read_bytes() == relu_pool_file.read_bytes()


def test_nearest_mutant_names_the_closest_rule(relu_pool_file):
    relu = load_pools(relu_pool_file)["relu"]
    identity = next(m for m in relu.mutants if m.id == "relu-identity")
    assert relu.nearest_mutant(identity.kills)["rule"] == "drop-relu"
    assert relu.nearest_mutant(identity.kills)["similarity"] == 1.0


def test_judge_reports_the_nearest_mutant_of_a_wrong_kernel(relu_pool_file):
    judge = Judge("kernelbench", backend="cpu", pool_file=str(relu_pool_file), num_cpus=2, workers=2)
    try:
        # a hand-written wrong kernel, not one of the matrix's mutants: ReLU forgotten in a new way
        wrong = substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, v);")
        j = judge.judge(wrong, "relu")
        assert j.accepted and j.prescreen["false_accept"] is True
        assert j.prescreen["nearest_mutant"]["rule"] == "drop-relu"
        # the kill matrix's inputs, and one per shape class and value family beside them
        file_inputs = load_pools(relu_pool_file)["relu"].inputs
        extra = [r for r in coverage_inputs("relu") if r not in file_inputs]
        assert j.prescreen["pool_size"] == len(file_inputs) + len(extra) and extra
        assert judge.judge(wrong, "relu") == j                         # the same text: remembered
        assert judge.leakage.as_dict()[judge.checker_id]["false_accepts"] == 2     # and counted again
    finally:
        judge.close()


def test_malformed_pool_file_is_named(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(json.dumps({"format": "other"}).encode()))
    with pytest.raises(ValueError, match="bad.json.gz.*format"):
        load_pools(bad)
    with pytest.raises(ValueError, match="cannot be read"):
        PoolRegistry(tmp_path / "missing.json.gz")


def test_gated_pool_keeps_only_valid_inputs_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("MUTAGYM_CACHE", str(tmp_path / "cache"))
    pool = gated_pool("relu")
    assert pool.origin == "validity-gate" and pool.mutants == ()
    assert "relu:large_magnitude:official:0" in pool.input_ids or len(pool.input_ids) > 10
    cached = list((tmp_path / "cache" / "pools").glob("relu-*.json.gz"))
    assert len(cached) == 1
    assert gated_pool("relu") == pool                     # read back, identical


def test_pool_keeps_the_generators_the_matrix_leaves_out():
    """The kill matrix draws its costly presets with fewer generators than the pool; the pool's
    coverage inputs bring back exactly the valid ones of the difference (softmax: four presets)."""
    from mutagym.envs.pool import POOL_PRESET_GENERATORS
    from mutagym.rewards.generators import families_for
    from mutagym.rewards.validity import check_validity
    p = load_problem("softmax")
    matrix = candidate_inputs(p, KillMatrixSettings(shape_classes=()))
    pooled = candidate_inputs(p, KillMatrixSettings(shape_classes=(), preset_generators=dict(POOL_PRESET_GENERATORS)))
    drawn = {g.id for g in matrix}
    left_out = [g for g in pooled if g.id not in drawn]
    assert drawn < {g.id for g in pooled} and {g.preset for g in left_out} == {"official", "remainder", "large_reduction"}
    valid = {(g.generator, g.preset) for g, v in zip(left_out, check_validity(p, left_out)) if v.valid}
    coverage = {(r.generator, r.preset) for r in coverage_inputs("softmax") if not r.preset.startswith("@")}
    assert coverage - {(f, "official") for f in families_for(p)} == valid
    assert ("normal", "official") in valid and ("uniform01", "large_reduction") in valid
    assert not any(g.preset == "tiny" for g in left_out)          # tiny takes every generator in both


def test_judge_pool_retries_a_killed_actor_and_reports_timeouts():
    checker = load_checker("kernelbench")
    with JudgePool(workers=1, num_cpus=2, timeout_s=120) as pool:
        [pid] = pool.actor_pids()
        handle = pool.submit(checker, "layernorm", load_problem("layernorm").kernel_sources()["substrate"])
        os.kill(pid, signal.SIGKILL)
        [verdict] = pool.gather([handle])
        assert getattr(verdict, "accepted", None) is True, verdict
        assert pool.actor_pids() != [pid]
        pool.timeout_s = 0.001
        [late] = pool.gather([pool.submit(checker, "softmax", load_problem("softmax").kernel_sources()["substrate"])])
        assert isinstance(late, WorkTimeout)


def test_judge_pool_waits_per_call_from_when_its_actor_was_free():
    """A batch queued on one actor takes longer than one call's wait; no call of it times out."""
    import time
    checker = load_checker("kernelbench")
    source = load_problem("softmax").kernel_sources()["substrate"]
    with JudgePool(workers=1, num_cpus=2, timeout_s=120) as pool:
        single = 0.0
        for warm in range(3):    # the first call builds the kernel; the others reuse the build
            t0 = time.monotonic()
            [verdict] = pool.gather([pool.submit(checker, "softmax", source)])
            single = max(single, time.monotonic() - t0) if warm else 0.0
            assert getattr(verdict, "accepted", None) is True, verdict
        pool.timeout_s = max(1.0, 3 * single)
        handles = [pool.submit(checker, "softmax", source) for _ in range(int(3 * pool.timeout_s / single) + 2)]
        t0 = time.monotonic()
        verdicts = pool.gather(handles)
        assert time.monotonic() - t0 > pool.timeout_s      # the batch outlasted one call's wait
        assert all(getattr(v, "accepted", None) is True for v in verdicts), verdicts


def test_input_cache_evicts_least_recently_used():
    from mutagym.rewards.checker import InputRef
    p = load_problem("relu")
    cache = InputCache(budget_bytes=1)
    a = cache.get(p, InputRef(generator="normal", preset="tiny"))[0]
    cache.get(p, InputRef(generator="sign_mixed", preset="tiny"))
    assert len(cache) == 1 and cache.get(p, InputRef(generator="normal", preset="tiny"))[0] is not a
    with pytest.raises(ValueError, match="budget_bytes"):
        InputCache(budget_bytes=-1)
