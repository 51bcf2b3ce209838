"""The whole declared domain (issue 31 item 3): every dim's least size and declared maximum, and a
tensor past 2**24 elements where the ranges allow, tried in rotation, one corner per evaluation."""

import pytest

from mutagym.envs.judge import Judge
from mutagym.envs.pool import corner_inputs
from mutagym.rewards.shapes import CORNER_ELEMENTS, corners, cost
from mutagym.substrates.catalog import list_problems, load_problem

RELU = load_problem("relu").kernel_sources()["substrate"]


@pytest.mark.parametrize("problem", list_problems())
def test_every_dim_reaches_its_declared_least_and_largest_size(problem):
    """A declared maximum the gate cannot reach would be a promise nobody checks: the ranges are
    narrowed where the correct kernels cannot run there in time (benchmarks/bench_corners.py)."""
    p = load_problem(problem)
    found = corners(p)
    assert found["min"] == {n: max(d.min, 1) for n, d in p.dims.items()}
    for name, d in p.dims.items():
        if d.max > found["min"][name]:
            assert found[f"{name}_max"][name] == d.max, (name, d.max)
    assert all(cost(p, dims).elements <= CORNER_ELEMENTS for dims in found.values())


def test_a_kernel_wrong_only_at_a_corner_is_rejected_within_one_rotation():
    """relu skipping its work past 2**23 elements passes every fixed stage and the search (all
    far smaller); the n = 2**24 corner rejects it in one of relu's two evaluations a rotation."""
    marker = "const int tid"
    assert marker in RELU
    wrong = RELU.replace(marker, "if (n > (1 << 23)) return;\n    " + marker, 1)
    judge = Judge(prescreen=False, backend="cpu", secret=3)
    try:
        verdicts = [judge.judge(wrong + f"\n// evaluation {k}\n", "relu") for k in range(len(corner_inputs("relu")))]
    finally:
        judge.close()
    stages = [v.gate["stage"] for v in verdicts]
    assert "corner" in stages and [v.accepted for v in verdicts].count(False) == 1, stages


@pytest.mark.slow
@pytest.mark.parametrize("problem", list_problems())
def test_the_reference_and_substrate_run_at_every_corner(problem):
    from mutagym.rewards.judging import comparator_for, judge_kernel
    from mutagym.runtime import compile
    p = load_problem(problem)
    kernel = compile(p.kernel_sources()["substrate"])
    for ref in corner_inputs(p):
        g = ref.generate(p)
        [case] = judge_kernel(kernel, p, [g], comparator_for(p), timeout_s=120.0)["ascending"]
        assert case.passed, (g.id, case.message)
