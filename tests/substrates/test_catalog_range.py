"""The catalog is sound over its whole range: every reference runs at the extremes its dims and
budget allow within a memory limit, and every substrate and variant passes a draw of shape classes
x value families (the full sweep is benchmarks/bench_catalog_range.py)."""

from __future__ import annotations

import resource
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from mutagym.rewards.generators import families_for, generate
from mutagym.rewards.shapes import shape_classes
from mutagym.rewards.validity import check_validity
from mutagym.substrates import list_problems, load_problem

PROBLEMS = list_problems()
#: Address space a reference may use at the top of its range: a dense n x n temporary at n = 65536
#: (32 GiB) fails under it, every sound reference fits.
REFERENCE_BYTES = 6 << 30
#: The classes at the extremes of a problem's range.
EXTREMES = ("long_loop", "large", "many_rows", "tiny", "unit")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (REFERENCE_BYTES, REFERENCE_BYTES))


def _reference_at_extremes(pid: str) -> list[str]:
    """Run the problem's reference on `normal` inputs of every extreme class it offers; what went
    wrong, one line each."""
    p = load_problem(pid)
    wrong = []
    for cls in EXTREMES:
        if cls not in shape_classes(p):
            continue
        g = generate(p, "normal", preset=f"@{cls}", seed=0)
        try:
            out = p.reference_outputs(g.inputs, dims=g.dims)
        except Exception as exc:  # noqa: BLE001 (the verdict names whatever the reference raised)
            wrong.append(f"{g.id} {g.dims}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        wrong += [f"{g.id} {g.dims}: output {k} not finite" for k, v in out.items()
                  if not np.isfinite(v.astype(np.float64)).all()]
    return wrong


def test_every_reference_runs_at_the_extremes_of_its_range():
    """matmul_diag's reference once built the n x n diagonal (32 GiB at n = 65536)."""
    with ProcessPoolExecutor(max_workers=1, initializer=_limit_memory) as pool:
        wrong = [w for found in pool.map(_reference_at_extremes, PROBLEMS) for w in found]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("pid", ["softmax", "log_softmax", "softmax_bf16", "cross_entropy"])
def test_online_variants_pass_masked_logits(pid):
    """The online-softmax variants once added expf(-inf - -inf) = NaN for each -inf logit a thread
    met before its first finite one."""
    p = load_problem(pid)
    verdicts = check_validity(p, [generate(p, "masked", preset=preset, seed=1)
                                  for preset in ("official", "tiny", "@odd", "@mod32")])
    assert all(v.valid for v in verdicts), "\n".join(v.reason for v in verdicts if not v.valid)


def _draw(problem, index: int) -> list:
    """Three (class, family) pairs for the problem at catalog position `index`: the classes and
    the families (with `normal`) taken in turn, so that the catalog as a whole meets them all."""
    classes = shape_classes(problem)
    families = ["normal"] + families_for(problem)
    return [generate(problem, families[(index + k) % len(families)],
                     preset=f"@{classes[(3 * index + 7 * k) % len(classes)]}", seed=index)
            for k in range(3)]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PROBLEMS)), ids=PROBLEMS)
def test_every_correct_kernel_passes_a_draw_of_classes_and_families(index):
    p = load_problem(PROBLEMS[index])
    verdicts = check_validity(p, _draw(p, index), timeout_s=60.0)
    assert all(v.valid for v in verdicts), "\n".join(f"{v.id} {v.input.dims}: {v.reason}"
                                                    for v in verdicts if not v.valid)
