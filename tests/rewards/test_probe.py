"""The probe of our own (benchmarks/probe, issue 17 item 4) is consistent: every kernel of the
manifest exists and is a submission both compilers accept, every wrong kernel's witness kills it on
the emulator against the fp64 reference, and every correct kernel is right on its inputs in two
thread orders (bench_probe.py then measures the gate and the checkers on them)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.runtime.submission import parse_submission
from mutagym.substrates.catalog import load_problem

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_probe.py"
_spec = importlib.util.spec_from_file_location("bench_probe", _BENCH)
bench_probe = importlib.util.module_from_spec(_spec)
sys.modules["bench_probe"] = bench_probe
_spec.loader.exec_module(bench_probe)

KERNELS = bench_probe.load_manifest()
WRONG = [k for k in KERNELS if k.expected == "wrong"]
CORRECT = [k for k in KERNELS if k.expected == "correct"]


def _id(kernel) -> str:
    return kernel.file.removesuffix(".cu")


def test_the_probe_is_large_and_balanced():
    """At least 60 kernels over at least 15 catalog problems, half wrong and half correct, one
    entry per file and no file in the folder left out of the manifest."""
    assert len(KERNELS) >= 60 and len({k.problem for k in KERNELS}) >= 15
    assert len(WRONG) >= 30 and len(CORRECT) >= 30 and abs(len(WRONG) - len(CORRECT)) <= 2
    files = [k.file for k in KERNELS]
    assert len(files) == len(set(files))
    assert sorted(files) == sorted(p.name for p in bench_probe.PROBE_DIR.glob("*.cu"))
    for k in KERNELS:
        load_problem(k.problem)


@pytest.mark.parametrize("kernel", KERNELS, ids=_id)
def test_every_kernel_is_a_submission_both_compilers_accept(kernel):
    """The launch block parses, and NVRTC (the compile gate) accepts the text."""
    source = kernel.source
    assert parse_submission(source).launches
    nvrtc_compile(source)


@pytest.mark.parametrize("kernel", WRONG, ids=_id)
def test_every_wrong_kernel_dies_on_its_witness(kernel):
    """The witness (after the input run before it, if any) is a wrong output or a fault."""
    *before, witness = bench_probe.run_cases(kernel)["ascending"]
    assert all(c.passed for c in before), [c.message for c in before]
    assert not witness.passed, f"{kernel.file} survives its witness {kernel.witness}"


@pytest.mark.parametrize("kernel", [pytest.param(k, marks=pytest.mark.xfail(reason=k.gap, strict=True))
                                    if k.gap else k for k in CORRECT], ids=_id)
def test_every_correct_kernel_is_right_on_its_inputs(kernel):
    """Every input passes at the problem's tolerance, threads ascending and descending."""
    for schedule, cases in bench_probe.run_cases(kernel, ("ascending", "descending")).items():
        failed = [f"{c.input_id}: {c.message}" for c in cases if not c.passed]
        assert not failed, (schedule, failed)


def test_a_malformed_entry_is_named(tmp_path):
    """A wrong kernel without a witness, an unknown expectation and an input of another problem
    are refused with the entry and the key named."""
    bad = tmp_path / "probe.toml"
    bad.write_text('[[kernel]]\nfile = "a.cu"\nproblem = "relu"\nexpected = "wrong"\nkind = "x"\nfault = "y"\n')
    with pytest.raises(ValueError, match=r"kernel #0 \(a.cu\): unknown keys \[\], missing keys \['witness'\]"):
        bench_probe.load_manifest(bad)
    bad.write_text('[[kernel]]\nfile = "a.cu"\nproblem = "relu"\nexpected = "maybe"\n')
    with pytest.raises(ValueError, match="expected must be 'wrong' or 'correct', got 'maybe'"):
        bench_probe.load_manifest(bad)
    bad.write_text('[[kernel]]\nfile = "a.cu"\nproblem = "relu"\nexpected = "correct"\nnumerics = "n"\n'
                   'inputs = ["softmax:normal:official:0"]\n')
    with pytest.raises(ValueError, match="input 'softmax:normal:official:0' is not an input of problem 'relu'"):
        bench_probe.load_manifest(bad)
