"""The command line, run as a real subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mutagym.substrates

SUBSTRATES = Path(mutagym.substrates.__file__).parent


def mutagym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True, timeout=600)


def test_problems_json_lists_the_canonical_problems():
    proc = mutagym("problems", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["id"]: r for r in json.loads(proc.stdout)}
    assert {"relu", "softmax", "layernorm", "rmsnorm"} <= set(rows)
    assert len(rows) >= 40
    assert rows["layernorm"]["inputs"] == ["x:activation:float32", "weight:affine_scale:float32",
                                           "bias:affine_shift:float32"]


def test_run_substrate_passes_and_reports_errors():
    proc = mutagym("run", str(SUBSTRATES / "softmax" / "substrate.cu"), "--problem", "softmax",
                   "--generator", "large_offset", "--shape", "remainder", "--backend", "cpu", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads(proc.stdout)
    assert record["passed"] and record["outcome"] == "ok"
    assert record["input"] == "softmax:large_offset:remainder:0"


def test_run_wrong_kernel_fails(tmp_path):
    """ReLU submitted for the sigmoid problem is a wrong kernel: exit status 1, output fails."""
    kernel = tmp_path / "k.cu"
    kernel.write_text((SUBSTRATES / "relu" / "substrate.cu").read_text())
    proc = mutagym("run", str(kernel), "--problem", "sigmoid", "--backend", "cpu", "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["outputs"]["out"]["passed"] is False


def test_run_rejected_submission_names_the_line(tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text((SUBSTRATES / "relu" / "substrate.cu").read_text().replace("fmaxf", "fmaxf_typo"))
    proc = mutagym("run", str(kernel), "--problem", "relu", "--backend", "cpu")
    assert proc.returncode == 2
    assert "rejected" in proc.stdout and "submission.cu:" in proc.stdout


def test_prompt_shows_contract_and_a_different_example():
    proc = mutagym("prompt", "layernorm")
    assert proc.returncode == 0
    text = proc.stdout
    assert "weight: float32 [cols] (role affine_scale)" in text
    assert "def reference" in text and "/* mutagym" in text
    assert "Example submission (for a different problem, `relu`)" in text


def test_verify_fails_naming_problem_kernel_and_input(tmp_path, monkeypatch):
    """A catalog whose substrate is wrong makes `verify` fail and name problem, kernel and input."""
    import shutil

    from mutagym.rewards.verify import verify_problem
    from mutagym.substrates.catalog import load_problem
    folder = tmp_path / "relu"
    shutil.copytree(SUBSTRATES / "relu", folder)
    substrate = folder / "substrate.cu"
    substrate.write_text(substrate.read_text().replace("fmaxf(", "fminf("))
    report = verify_problem(load_problem(folder))
    assert not report.passed
    assert "relu: kernel 'substrate' fails input relu:" in str(report.failures[0])


@pytest.mark.parametrize("problem", ["relu", "layernorm"])
def test_verify_command_passes(problem):
    proc = mutagym("verify", "--problems", problem, "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    (row,) = json.loads(proc.stdout)
    assert row["passed"] and row["inputs"] >= 20


class TestRunAppliesTheNvrtcGate:
    """`mutagym run` refuses what `mutagym eval` refuses: NVRTC gates the text on every backend,
    so a kernel never runs in one command and fails to compile in the other (issue 15, item 6)."""

    def kernel(self, tmp_path, old: str, new: str) -> Path:
        path = tmp_path / "k.cu"
        source = (SUBSTRATES / "relu" / "substrate.cu").read_text()
        assert old in source
        path.write_text(source.replace(old, new))
        return path

    def test_a_kernel_only_nvrtc_refuses_fails_run_with_its_message(self, tmp_path):
        """significandf is glibc's: the emulator builds and runs the kernel correctly, NVRTC
        has no such function, so `run` refuses it with NVRTC's words, as `eval` does."""
        path = self.kernel(tmp_path, "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) + 0.0f * significandf(v);")
        proc = mutagym("run", str(path), "--problem", "relu", "--backend", "cpu")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "rejected (compile_error)" in proc.stdout
        assert "NVRTC rejected the kernel" in proc.stdout and "significandf" in proc.stdout
        judged = mutagym("eval", "--problem", "relu", str(path), "--json")
        assert "NVRTC" in judged.stdout and "compile_error" in judged.stdout, judged.stdout[-2000:]

    def test_atomic_max_on_float_fails_run(self, tmp_path):
        """atomicMax(float*, float), which CUDA lacks, is refused by `run` (the emulator no
        longer has it either)."""
        path = self.kernel(tmp_path, "out[i] = relu_op(x[i]);", "atomicMax(out + i, relu_op(x[i]));")
        proc = mutagym("run", str(path), "--problem", "relu", "--backend", "cpu")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "rejected (compile_error)" in proc.stdout and "atomicMax" in proc.stdout
