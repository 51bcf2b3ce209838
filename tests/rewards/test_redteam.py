"""The red team's seen half (benchmarks/redteam/seen, issue 31 item 6) holds: every kernel is a
submission both compilers accept, its witness is inside the problem's declared domain and valid
(the substrate and every variant pass it in the gate's three thread orders), the kernel fails it
in each of them, and the kernel passes an ordinary input. The unseen half is held out: nothing
here reads it (bench_redteam.py measures the gate on both)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.runtime.submission import parse_submission
from mutagym.substrates.catalog import load_problem

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_redteam.py"
_spec = importlib.util.spec_from_file_location("bench_redteam", _BENCH)
bench_redteam = importlib.util.module_from_spec(_spec)
sys.modules["bench_redteam"] = bench_redteam
_spec.loader.exec_module(bench_redteam)

SEEN = bench_redteam.load_half("seen")
#: Witnesses with more elements than this take seconds per correct kernel and order: slow tests.
LARGE_WITNESS = 1 << 22


def _id(kernel) -> str:
    return kernel.name


def _marked(kernel):
    return pytest.param(kernel, marks=pytest.mark.slow) if bench_redteam.witness_elements(kernel) > LARGE_WITNESS \
        else kernel


def test_the_seen_half_is_the_even_hash_half_of_its_folder():
    """Every .cu of the seen folder has an entry, one per file, and its sha256 is even; the half
    keeps kernels over many problems."""
    files = [k.file for k in SEEN]
    assert len(files) == len(set(files))
    assert sorted(files) == sorted(p.name for p in (bench_redteam.REDTEAM_DIR / "seen").glob("*.cu"))
    assert all(bench_redteam.half_of(f) == "seen" for f in files)
    assert len(SEEN) >= 15 and len({k.problem for k in SEEN}) >= 10


@pytest.mark.parametrize("kernel", SEEN, ids=_id)
def test_every_kernel_is_a_submission_both_compilers_accept(kernel):
    """The launch block parses, and NVRTC (the compile gate) accepts the text."""
    assert parse_submission(kernel.source).launches
    nvrtc_compile(kernel.source)


@pytest.mark.parametrize("kernel", SEEN, ids=_id)
def test_every_witness_is_inside_the_declared_domain(kernel):
    """The witness's dims are within the spec's ranges and it builds to finite values of each
    input's dtype (integer inputs inside their declared range)."""
    import numpy as np
    problem = load_problem(kernel.problem)
    problem.check_dims(kernel.witness["dims"])
    witness = bench_redteam.build_witness(problem, kernel.witness, kernel.name)
    for spec in problem.inputs:
        arr = np.asarray(witness.inputs[spec.name])
        assert arr.dtype.name == spec.dtype and arr.shape == problem.shape(spec.name, witness.dims)
        assert np.isfinite(arr.astype(np.float64)).all(), f"input {spec.name!r} holds a non-finite value"


@pytest.mark.parametrize("kernel", [_marked(k) for k in SEEN], ids=_id)
def test_every_witness_is_valid_and_kills_its_kernel(kernel):
    """Every correct kernel passes the witness in ascending, descending and shuffled order; the
    kernel fails it in each order, and passes the ordinary input."""
    v = bench_redteam.validate(kernel)
    assert v.valid, v.correct_failures
    assert v.witnessed, v.kernel_outcomes
    assert v.ordinary == "ok", f"{kernel.file} fails the ordinary input {bench_redteam.ORDINARY}"


def test_a_witness_rule_that_names_nothing_is_refused():
    """A rule naming an unknown input, no operation or two operations, and an index with other
    characters than integers and slices are refused, naming the rule."""
    problem = load_problem("relu")
    for rule in ({"input": "y", "set": 1.0}, {"input": "x"}, {"input": "x", "set": 1.0, "add": 2.0}):
        with pytest.raises(ValueError, match=r"rule #0 .* must name one input of \['x'\]"):
            bench_redteam.build_witness(problem, {"generator": "normal", "dims": {"n": 8}, "rules": [rule]}, "w")
    with pytest.raises(ValueError, match="only integers, ':' and ',' are allowed"):
        bench_redteam.build_witness(problem, {"generator": "normal", "dims": {"n": 8},
                                              "rules": [{"input": "x", "at": "x[0]", "set": 1.0}]}, "w")
    with pytest.raises(ValueError, match=r"dim 'n' = 0 is outside \[1, 16777216\]"):
        bench_redteam.build_witness(problem, {"generator": "normal", "dims": {"n": 0}}, "w")


def test_a_witness_rule_changes_only_what_it_selects():
    """`set` at an index changes that element alone; `copy` then `noise` gives another input the
    first one's values plus noise; the same recipe gives the same arrays."""
    import numpy as np
    problem = load_problem("mse_loss")
    recipe = {"generator": "normal", "dims": {"n": 16}, "seed": 3,
              "rules": [{"input": "predictions", "at": "5", "set": -0.0},
                        {"input": "targets", "copy": "predictions"}, {"input": "targets", "noise": 1e-3}]}
    w = bench_redteam.build_witness(problem, recipe, "w")
    base = bench_redteam.build_witness(problem, {**recipe, "rules": []}, "w")
    p, t = w.inputs["predictions"], w.inputs["targets"]
    assert np.signbit(p[5]) and p[5] == 0 and np.array_equal(np.delete(p, 5), np.delete(base.inputs["predictions"], 5))
    assert 0 < np.abs(t - p).max() < 1e-2
    again = bench_redteam.build_witness(problem, recipe, "w")
    assert all(np.array_equal(again.inputs[k], w.inputs[k]) for k in w.inputs)
