"""Every substrate and variant of the catalog passes `verify` on the CPU backend.

This is the catalog's correctness guarantee: each correct kernel matches the fp64 reference on
every shape preset crossed with the verification generators (20+ inputs per problem).
"""

import pytest

from mutagym.rewards.verify import verify_problem
from mutagym.substrates.catalog import list_problems, load_problem


@pytest.mark.parametrize("problem_id", list_problems())
def test_substrate_and_variants_pass_verify(problem_id):
    report = verify_problem(load_problem(problem_id), backend="cpu")
    assert report.inputs >= 20
    assert report.passed, "\n".join(str(f) for f in report.failures[:10])


def test_reduction_problems_have_a_variant():
    """Variants measure legitimate floating-point variance: every reduction needs one."""
    missing = [pid for pid in list_problems()
               if load_problem(pid).spec.reduction_dim and not load_problem(pid).spec.kernels.variants]
    assert not missing
