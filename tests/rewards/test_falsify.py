"""The falsification search (issue 31 item 2): from the inputs where a kernel came closest to its
envelope, moves of values and shapes until it fails on an input every correct kernel passes."""

import tomllib
from pathlib import Path

import pytest

from mutagym.envs.gate import SCHEDULES
from mutagym.envs.pool import PoolRegistry
from mutagym.rewards.envelope import DEFAULT_RULE
from mutagym.rewards.checker import InputRef
from mutagym.rewards.falsify import SearchBudget, SearchReport, _confirm, _sweep, falsify
from mutagym.rewards.moves import generate_from_id, moves_for
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


@pytest.mark.parametrize("file", ["hardsigmoid_relu6_abs.cu", "triplet_margin_loss_gram_distance.cu",
                                  "softmax_twopass_sentinel.cu", "argmin_dim_warp_keys.cu",
                                  "cumsum_exclusive_inclusive_minus_x.cu"])
def test_the_search_finds_a_valid_witness_the_fixed_inputs_miss(file):
    """Red-team kernels of the seen half (faults past a magnitude, a cancellation, a finite
    sentinel under all-negative rows, signed zeros as a row's minimum, a prefix absorbed by a far
    outlier): the search rejects them on an input every correct kernel passes in every order, and
    the same seed finds the same witness."""
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


def test_a_budget_of_no_candidates_and_no_sweep_tries_nothing_and_accepts():
    entry = SEEN["relu_abs_average.cu"]
    source = (BENCH / "redteam" / "seen" / entry["file"]).read_text()
    verdicts, report = search(entry["problem"], source, budget=SearchBudget(candidates=0, rounds=1, sweep_elements=0))
    assert report.tried == 0 and all(v.accepted for v in verdicts.values())
    verdicts, report = search(entry["problem"], source, budget=SearchBudget(candidates=0, rounds=1))
    assert report.tried > 0 and not all(v.accepted for v in verdicts.values())   # the sweep alone finds it


def test_the_sweep_tries_every_value_move_and_every_arrangement_on_one_signed_rows():
    """The sweep's first round: each move once, and each arrangement (outliers, zeros, ties) on
    all-positive and all-negative rows, at a shape of at most `sweep_elements` that keeps the
    parent's proportions."""
    p = load_problem("argmin_dim")
    parent = next(r for r in POOLS.get("argmin_dim").inputs if r.preset == "official")
    swept = _sweep(p, parent, {"rows": 64, "cols": 1024}, 1 << 12)
    chains = [r.generator.split("~", 1)[1] for r in swept]
    assert set(moves_for(p)) <= set(chains)
    assert "magnitude~signed_zeros" in chains and "magnitude~negate~spike_1e8_last" in chains
    assert "magnitude~scale_1e6" not in chains                  # a regime on a regime: the climb's job
    assert {r.preset for r in swept} == {"=cols=64,rows=64"}


def welford_with_empty_merge() -> str:
    """The probe's warp Welford as it was before its fix: merging a lane that saw no element
    computes d * d * 0, which past |d| = 1.8e19 is inf * 0 = NaN."""
    fixed = (BENCH / "probe" / "layernorm_welford_warp.cu").read_text()
    guarded = "m2 += q2 + (w > 0.0f ? d * d * w : 0.0f);"
    assert guarded in fixed
    return fixed.replace(guarded, "m2 += q2 + d * d * w;")


def test_a_suspect_whose_values_fail_a_correct_kernel_at_the_official_shape_does_not_judge():
    """A one-element row at 1e38 passes the two-pass substrate (its deviation is exactly 0) while
    a Welford merge with an empty lane squares it into inf * 0; at the official shape the same
    values overflow the substrate too, so the regime is outside float32 normalisers and the
    suspect is discarded. The same kernel on a row near 3.7e19 (a square past float32's range)
    whose official-shape twin every correct kernel computes (deviations near 1e16) is rejected."""
    p = load_problem("layernorm")
    kernel = compile(welford_with_empty_merge())
    args = (POOLS.get("layernorm").checker(), p, kernel)
    outside = InputRef(generator="normal~band_top", preset="=cols=1,rows=1", seed=0)
    report = SearchReport()
    assert _confirm(*args, [(float("inf"), outside)], SCHEDULES, DEFAULT_RULE, SearchBudget(), InputCache(),
                    "cpu", 30.0, report) is None
    assert "at the official shape" in report.log[0]
    inside = InputRef(generator="large_magnitude~offset_1e7~band_root", preset="=cols=1,rows=1", seed=0)
    verdicts = _confirm(*args, [(float("inf"), inside)], SCHEDULES, DEFAULT_RULE, SearchBudget(), InputCache(),
                        "cpu", 30.0, SearchReport())
    assert verdicts is not None and not all(v.accepted for v in verdicts.values())
