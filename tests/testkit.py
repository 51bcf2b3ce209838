"""Helpers shared by the test folders (on pytest's path through `pythonpath` in pyproject.toml)."""

import contextlib
import os
import sys

from mutagym.substrates.catalog import load_problem


def substrate_with(problem: str, old: str, new: str) -> str:
    """The problem's substrate with `old` replaced by `new`: a hand-written mutant. Fails loudly
    when the substrate no longer holds `old` (a silent no-op would make the mutant correct)."""
    src = load_problem(problem).kernel_sources()["substrate"]
    assert old in src, (problem, old)
    return src.replace(old, new)


@contextlib.contextmanager
def local_ray(num_cpus: int = 2, module: str | None = None):
    """A local Ray cluster for a test module, shut down after; one another module started is reused
    and left running. `module` (a `__name__`) is pickled by value, so its helpers run on workers."""
    import ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    if module is not None:
        ray.cloudpickle.register_pickle_by_value(sys.modules[module])
    try:
        yield
    finally:
        if started:
            ray.shutdown()
