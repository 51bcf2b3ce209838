"""RayPool's submission window, on a cluster of its own (see the note in `cluster`)."""

import os

import pytest
import ray

from mutagym.mutants.ray_pool import IN_FLIGHT_PER_CPU, RayPool


@pytest.fixture(scope="module")
def cluster():
    """A fresh local cluster for this module. Not the kill-matrix tests' cluster: after their
    tests SIGKILL Ray workers, a later call on that cluster was once seen (pytest -n 2 over
    tests/mutants) to get an earlier call's result for one task, a Ray-side effect noted on issue 5."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_more_tasks_than_are_kept_in_flight(cluster):
    """Payloads beyond the in-flight window are submitted as earlier tasks finish; each result
    comes back once, with its index."""
    with RayPool(progress=False) as pool:
        n = 4 * IN_FLIGHT_PER_CPU * int(pool.cluster_cpus) + 3
        assert sorted(pool.map_unordered(abs, [-i for i in range(n)])) == [(i, i) for i in range(n)]
