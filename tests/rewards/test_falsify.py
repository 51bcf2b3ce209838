"""The falsification search (issue 31 item 2): from the inputs where a kernel came closest to its
envelope, moves of values and shapes until it fails on an input every correct kernel passes."""

import tomllib
from pathlib import Path

import pytest

from mutagym.envs.gate import SCHEDULES
from mutagym.envs.pool import PoolRegistry
from mutagym.rewards.envelope import DEFAULT_RULE
from mutagym.rewards.falsify import SearchBudget, falsify
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.input_cache import InputCache
from mutagym.rewards.judging import comparator_for
from mutagym.rewards.validity import check_validity
from mutagym.runtime import compile
from mutagym.substrates.catalog import list_problems, load_problem

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
SEEN = {e["file"]: e for e in tomllib.loads((BENCH / "redteam" / "seen" / "redteam.toml").read_text())["kernel"]}
PROBE_CORRECT = [e for e in tomllib.loads((BENCH / "probe" / "probe.toml").read_text())["kernel"]
                 if e["expected"] == "correct"]
POOLS = PoolRegistry()


def search(problem: str, source: str, seed: int = 5, budget: SearchBudget = SearchBudget()):
    p = load_problem(problem)
    starts = [r for r in POOLS.get(problem).inputs if r.preset in ("official", "remainder")][:3]
    return falsify(POOLS.get(problem).checker(), p, compile(source), compile(p.kernel_sources()["substrate"]),
                   starts, seed=seed, schedules=SCHEDULES, rule=DEFAULT_RULE, budget=budget, cache=InputCache())


@pytest.mark.parametrize("file", ["hardsigmoid_relu6_abs.cu", "mse_loss_expanded_square.cu"])
def test_the_search_finds_a_valid_witness_the_fixed_inputs_miss(file):
    """Red-team kernels of the seen half (faults past a magnitude, a cancellation):
    the search rejects them on an input every correct kernel passes in every order, and the same
    seed finds the same witness."""
    entry = SEEN[file]
    source = (BENCH / "redteam" / "seen" / file).read_text()
    verdicts, report = search(entry["problem"], source)
    assert not all(v.accepted for v in verdicts.values()) and report.witness
    p = load_problem(entry["problem"])
    [validity] = check_validity(p, [generate_from_id(report.witness)], comparator_for(p), schedules=SCHEDULES)
    assert validity.valid, validity.reason
    assert search(entry["problem"], source)[1].witness == report.witness


@pytest.mark.parametrize("problem", ["relu", "softmax", "layernorm", "sum_dim", "cross_entropy"])
def test_the_search_rejects_no_correct_kernel_of_the_catalog(problem):
    for name, source in load_problem(problem).kernel_sources().items():
        verdicts, report = search(problem, source)
        assert all(v.accepted for v in verdicts.values()), (name, report.witness, report.log)
        assert report.tried > 0


@pytest.mark.slow
@pytest.mark.parametrize("entry", PROBE_CORRECT, ids=lambda e: e["file"])
def test_the_search_rejects_no_correct_kernel_of_the_probe(entry):
    """Correct kernels written outside the catalog, in other numerics: none is rejected."""
    verdicts, report = search(entry["problem"], (BENCH / "probe" / entry["file"]).read_text())
    assert all(v.accepted for v in verdicts.values()), (report.witness, report.log)


def test_a_budget_of_no_candidates_tries_nothing_and_accepts():
    entry = SEEN["relu_abs_average.cu"]
    verdicts, report = search(entry["problem"], (BENCH / "redteam" / "seen" / entry["file"]).read_text(),
                              budget=SearchBudget(candidates=0, rounds=1))
    assert report.tried == 0 and all(v.accepted for v in verdicts.values())
