"""The correct set (benchmarks/correct, issue 31 item 1) is what its manifest says: at least 60
correct kernels over at least 20 catalog problems in styles the catalog lacks, each a submission
NVRTC compiles, and each paid the full reward by the reward gate (suite, pool of record, fresh
draws, three thread orders). The gate itself, not the pool-of-record checker alone, judges them:
the calibration the set is for needs kernels the whole gate accepts (benchmarks/README.md, "The
envelope" and "The time envelope")."""

import importlib.util
import sys
from pathlib import Path

import pytest

from mutagym.envs.judge import Judge
from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.runtime.submission import parse_submission
from mutagym.substrates.catalog import load_problem

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_correct_set.py"
_spec = importlib.util.spec_from_file_location("bench_correct_set", _BENCH)
bench_correct_set = importlib.util.module_from_spec(_spec)
sys.modules["bench_correct_set"] = bench_correct_set
_spec.loader.exec_module(bench_correct_set)

KERNELS = bench_correct_set.load_manifest()


def test_the_set_is_large_wide_and_complete():
    """At least 60 kernels over at least 20 problems, one entry per file, no file of the folder left
    out, and no kernel a copy of one of its problem's catalog kernels."""
    assert len(KERNELS) >= 60 and len({k.problem for k in KERNELS}) >= 20
    files = [k.file for k in KERNELS]
    assert len(files) == len(set(files))
    assert sorted(files) == sorted(p.name for p in bench_correct_set.CORRECT_DIR.glob("*.cu"))
    for k in KERNELS:
        catalog = {" ".join(s.split()) for s in load_problem(k.problem).kernel_sources().values()}
        assert " ".join(k.source.split()) not in catalog, k.file


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.stem)
def test_every_kernel_is_a_submission_nvrtc_compiles(kernel):
    """The launch block parses and NVRTC (the compile gate) accepts the text."""
    assert parse_submission(kernel.source).launches
    nvrtc_compile(kernel.source)


@pytest.fixture(scope="module")
def gate_judge():
    """The default gate, its fresh stage drawing with a fixed secret (bench_correct_set.py --mode
    gate measures other secrets)."""
    judge = Judge(backend="cpu", num_cpus=2, workers=2, secret=bench_correct_set.FIRST_SECRET)
    yield judge
    judge.close()


@pytest.mark.slow
@pytest.mark.parametrize("problem", sorted({k.problem for k in KERNELS}))
def test_the_reward_gate_pays_every_kernel_of_the_set(gate_judge, problem):
    """No false reject: every kernel earns reward 1 from the default gate (a problem at a time, so
    the set's cost spreads over the test workers)."""
    kernels = [k for k in KERNELS if k.problem == problem]
    results = gate_judge.judge_many([(k.source, k.problem) for k in kernels])
    refused = [(k.file, j.category, j.gate and j.gate["stage"], j.message[:200])
               for k, j in zip(kernels, results) if j.reward != 1.0]
    assert refused == []


def test_a_malformed_entry_is_named(tmp_path):
    """An unknown key, an unknown problem and a file not named after its problem and style are
    refused with the entry's index and file."""
    (tmp_path / "relu_x.cu").write_text("")
    bad = tmp_path / "correct.toml"
    bad.write_text('[[kernel]]\nfile = "relu_x.cu"\nproblem = "relu"\nstyle = "x"\nnumerics = "n"\ncolour = "red"\n')
    with pytest.raises(ValueError, match=r"kernel #0 \(relu_x.cu\): unknown keys \['colour'\], missing keys \[\]"):
        bench_correct_set.load_manifest(bad)
    bad.write_text('[[kernel]]\nfile = "relu_x.cu"\nproblem = "rellu"\nstyle = "x"\nnumerics = "n"\n')
    with pytest.raises(ValueError, match="no catalog problem 'rellu'"):
        bench_correct_set.load_manifest(bad)
    bad.write_text('[[kernel]]\nfile = "relu_x.cu"\nproblem = "relu"\nstyle = "y"\nnumerics = "n"\n')
    with pytest.raises(ValueError, match=r"named <problem>_<style>.cu .*, here relu_y.cu"):
        bench_correct_set.load_manifest(bad)
    bad.write_text('[[kernel]]\nfile = "relu_z.cu"\nproblem = "relu"\nstyle = "z"\nnumerics = "n"\n')
    with pytest.raises(ValueError, match="no such kernel file"):
        bench_correct_set.load_manifest(bad)
