"""Field faults captured and exported (issue 17 item 3): the judge keeps every kernel the reward
gate rejects on an input, with an input id that rebuilds the failing input, and `mutagym leaks
export` turns ledgers into a field-fault set in the probe's format."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mutagym.envs.field_ledger import FieldLedger, read_ledger
from mutagym.envs.judge import Judge
from mutagym.rewards.field_faults import load_field_set
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.judging import comparator_for, judge_kernel
from mutagym.runtime import compile
from mutagym.substrates.catalog import load_problem

PROBE = Path(__file__).resolve().parents[2] / "benchmarks" / "probe"
WRONG = (PROBE / "relu_vec4_partial_tail.cu").read_text()
CORRECT = (PROBE / "relu_scalar_512.cu").read_text()


def mutagym(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    """A ledger the gate filled: a wrong kernel judged twice, a correct one once."""
    folder = tmp_path_factory.mktemp("ledger")
    judge = Judge(prescreen=False, backend="cpu", secret=7, field_dir=str(folder))
    verdicts = [judge.judge(WRONG, "relu"), judge.judge(CORRECT, "relu"), judge.judge(WRONG, "relu")]
    judge.close()
    return folder, judge, verdicts


def test_a_gate_reject_is_kept_once_with_its_witness(ledger):
    """The rejected kernel is one record (its resubmission adds none), the correct one none; the
    record names the gate, its checker, the stage and order that failed."""
    folder, judge, (wrong, correct, again) = ledger
    assert not wrong.accepted and correct.accepted and not again.accepted
    [record] = read_ledger(folder)
    assert record["source"] == WRONG and record["problem"] == "relu"
    assert record["gate"] == wrong.checker == judge.checker_id
    assert record["checker"] == judge.gate.checker.version_id
    assert (record["stage"], record["schedule"]) == (wrong.gate["stage"], wrong.gate["schedule"])
    assert record["checker_alone_false_accept"] is wrong.gate["checker_alone"]["false_accept"]
    assert judge.field.written == 1


def test_only_rejects_with_a_witness_are_kept(tmp_path):
    """A kernel that NVRTC accepts and the CPU build refuses (`__fns` is not emulated: any device
    function the emulator lacks would do) fails every input alike, and so does a launch plan
    refused on every input (a `__half*` parameter for a float32 tensor): neither is kept; the
    wrong kernel beside them is."""
    no_build = CORRECT.replace("out[i] =", "unsigned q = __fns(5u, 0, 1); out[i] = (float)(q * 0) +", 1)
    assert no_build != CORRECT
    never_launched = (PROBE / "relu_fp16_inplace_clamp.cu").read_text()
    judge = Judge(prescreen=False, backend="cpu", secret=7, field_dir=str(tmp_path))
    verdicts = [judge.judge(s, "relu") for s in (no_build, never_launched, WRONG)]
    judge.close()
    assert [v.outcome for v in verdicts] == ["compile_error", "launch_error", "wrong"]
    assert [r["source"] for r in read_ledger(tmp_path)] == [WRONG]


def test_eval_help_says_where_the_ledger_goes_and_how_to_turn_it_off():
    proc = mutagym("eval", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "out/eval/field" in text and "--no-field" in text and "witness" in text


def test_the_witness_id_rebuilds_an_input_the_kernel_fails(ledger):
    """The stored id is `problem:generator:preset:seed`; rebuilt, the kernel fails it in the order
    the gate named (its unwritten last element is the poison)."""
    folder, _, _ = ledger
    [record] = read_ledger(folder)
    problem = load_problem("relu")
    [case] = judge_kernel(compile(WRONG, backend="cpu"), problem, [generate_from_id(record["witness"])],
                          comparator_for(problem), (record["schedule"],))[record["schedule"]]
    assert not case.passed and case.outcome == record["outcome"]


def test_the_ledger_is_bounded(tmp_path):
    """A full folder keeps what it has and counts the kernels it could not keep."""
    field = FieldLedger(tmp_path, max_records=1)
    args = dict(gate="g", checker="c", stage="suite", schedule="ascending", outcome="wrong",
                witness="relu:normal:official:0", checker_alone_false_accept=False)
    assert field.record("a", "relu", **args) is not None
    assert field.record("b", "relu", **args) is None
    assert (field.written, field.dropped) == (1, 1) and len(read_ledger(tmp_path)) == 1
    with pytest.raises(ValueError, match="max_records=0"):
        FieldLedger(tmp_path, max_records=0)


def test_a_file_that_is_no_record_is_named(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match=r"x.json'?: not a mutagym.field/1 record"):
        read_ledger(tmp_path)


def test_export_writes_a_probe_format_set_that_loads_back(ledger, tmp_path):
    """`mutagym leaks export` writes probe.toml and the kernel; a second export adds nothing; an
    export into a copy of the probe keeps its 71 kernels and its header."""
    folder, _, _ = ledger
    [record] = read_ledger(folder)
    out = tmp_path / "set"
    proc = mutagym("leaks", "export", str(out), "--from", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["added"] == 1
    [kernel] = load_field_set(out)
    assert (kernel.expected, kernel.kind, kernel.witness, kernel.source) == (
        "wrong", record["outcome"], record["witness"], WRONG)
    proc = mutagym("leaks", "export", str(out), "--from", str(folder), "--json")
    assert json.loads(proc.stdout)["added"] == 0
    probe = tmp_path / "probe"
    shutil.copytree(PROBE, probe)
    proc = mutagym("leaks", "export", str(probe), "--from", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"manifest": str(probe / "probe.toml"), "added": 0, "kernels": 71}
    assert (probe / "probe.toml").read_text().splitlines()[0] == (PROBE / "probe.toml").read_text().splitlines()[0]


def test_export_names_a_missing_ledger(tmp_path):
    proc = mutagym("leaks", "export", str(tmp_path / "set"), "--from", str(tmp_path / "none"))
    assert proc.returncode == 2 and "--from" in proc.stderr and "no such folder" in proc.stderr


def test_eval_keeps_a_ledger_under_its_output_folder(tmp_path):
    """`mutagym eval` keeps the gate's rejects in out/eval/field by default."""
    kernel = tmp_path / "k.cu"
    kernel.write_text(WRONG)
    proc = mutagym("eval", "--problem", "relu", str(kernel), "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    [record] = read_ledger(tmp_path / "out" / "eval" / "field")
    assert record["source"] == WRONG


def test_the_environment_passes_its_ledger_to_the_judge(tmp_path):
    from mutagym.envs.kernel_task import KernelTaskEnv
    env = KernelTaskEnv("relu", prescreen=False, backend="cpu", field_dir=str(tmp_path))
    assert env.judge.field.folder == tmp_path
    env.close()
