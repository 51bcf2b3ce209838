"""Helpers shared by the test folders (on pytest's path through `pythonpath` in pyproject.toml)."""

from mutagym.substrates.catalog import load_problem


def substrate_with(problem: str, old: str, new: str) -> str:
    """The problem's substrate with `old` replaced by `new`: a hand-written mutant. Fails loudly
    when the substrate no longer holds `old` (a silent no-op would make the mutant correct)."""
    src = load_problem(problem).kernel_sources()["substrate"]
    assert old in src, (problem, old)
    return src.replace(old, new)
