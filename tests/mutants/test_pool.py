"""The pool build: compile gate + quarantine, resumable, with the `mutate` and `mutant` commands."""

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from mutagym.mutants.generate import generate_pool
from mutagym.mutants.pool import POOL_FILE, build_pool, judge, quarantine_reason


@pytest.fixture(scope="module")
def relu_pool(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool")
    return out, build_pool(out, ["relu"], workers=2, progress=False)


def test_every_mutant_gets_a_status(relu_pool):
    _, build = relu_pool
    assert build.judged_now == len(build.pool.mutants) > 10
    statuses = {v.status for v in build.verdicts.values()}
    assert statuses <= {"compilable", "uncompilable", "quarantined"} and "compilable" in statuses
    for v in build.verdicts.values():
        assert (v.status == "compilable") == (v.stage is None)
        if v.status == "quarantined":
            assert v.stage == "quarantine" and "on the official inputs" in v.error


def test_an_out_of_bounds_mutant_is_quarantined_with_its_reason(relu_pool):
    """Reading one element past the input on the official inputs can never reach a reward."""
    _, build = relu_pool
    quarantined = [m for m in build.pool.mutants if build.verdicts[m.id].status == "quarantined"]
    assert quarantined, "relu's boundary/indexing mutants include out-of-bounds accesses"
    assert "memory_fault" in quarantine_reason(quarantined[0])


def test_a_correct_looking_mutant_is_not_quarantined():
    """A mutant that only changes values (deleted ReLU) runs cleanly: it stays compilable."""
    pool = generate_pool(["relu"])
    dropped_relu = next(m for m in pool.mutants if m.rule == "dom-drop-relu-max")
    assert quarantine_reason(dropped_relu) == ""
    assert judge(dropped_relu).status == "compilable"


def test_rerun_judges_nothing_and_an_interrupted_run_resumes(relu_pool, tmp_path):
    out, build = relu_pool
    again = build_pool(out, ["relu"], workers=1, progress=False)
    assert again.judged_now == 0 and again.verdicts == build.verdicts
    # An interruption: only the first half of the verdicts reached the file.
    table = pq.read_table(out / POOL_FILE)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), tmp_path / POOL_FILE)
    resumed = build_pool(tmp_path, ["relu"], workers=2, progress=False)
    assert resumed.judged_now == table.num_rows - half
    assert resumed.verdicts == build.verdicts


def test_mutate_and_mutant_commands(relu_pool):
    out, build = relu_pool
    proc = subprocess.run([sys.executable, "-m", "mutagym", "mutate", "--problems", "relu", "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["judged_now"] == 0 and report["mutants"] == len(build.pool.mutants)
    assert sum(sum(v.values()) for v in report["counts"].values()) == report["mutants"]
    some = build.pool.mutants[0]
    shown = subprocess.run([sys.executable, "-m", "mutagym", "mutant", some.id], capture_output=True,
                           text=True, timeout=300)
    assert shown.returncode == 0 and some.diff in shown.stdout
    missing = subprocess.run([sys.executable, "-m", "mutagym", "mutant", "0123456789abcdef"],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "ID '0123456789abcdef': no mutant of that id" in missing.stderr


def test_a_launch_that_cannot_start_is_quarantined_not_a_crash():
    """ceil_div -> floor division can shrink a grid to zero blocks: quarantined, and the build lives."""
    pool = generate_pool(["gemm_sigmoid_sum"])
    floors = [m for m in pool.mutants if m.rule == "bound-launch-ceil-div-to-floor"]
    verdicts = [judge(m) for m in floors]
    assert any(v.status == "quarantined" and v.error.startswith("launch_error on the official inputs")
               and "evaluates to 0" in v.error for v in verdicts)
