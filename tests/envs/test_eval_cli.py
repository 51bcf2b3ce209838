"""`mutagym eval --prescreen` on the judging service, run as a real subprocess."""

import json
import subprocess
import sys

from mutagym.substrates.catalog import load_problem
from testkit import substrate_with

RELU = load_problem("relu").kernel_sources()["substrate"]


def mutagym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True, timeout=600)


def test_eval_prescreen_with_the_default_pool_reports_leakage(tmp_path):
    good, bad = tmp_path / "good.cu", tmp_path / "bad.cu"
    good.write_text(RELU)
    bad.write_text(substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;"))
    proc = mutagym("eval", "--checker", "kernelbench", "--problem", "relu", str(good), str(bad),
                   "--prescreen", "--num-cpus", "2", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    recs = {r["kernel"]: r for r in json.loads(proc.stdout)}
    assert recs[str(bad)]["accepted"] and recs[str(bad)]["false_accept"] is True
    assert recs[str(good)]["pool_accepted"] is True and recs[str(good)]["false_reject"] is False
    assert {"kernel", "problem", "checker", "accepted", "outcome", "prescreen"} <= set(recs[str(good)])
    proc = mutagym("eval", "--checker", "kernelbench", "--problem", "relu", str(bad), "--prescreen",
                   "--num-cpus", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "reward leakage" in proc.stdout and "false accept" in proc.stdout


def test_eval_judges_with_the_reward_gate_by_default(tmp_path):
    """Without --checker the verdict is the gate's (its first stage the committed checker), and a
    correct kernel passes every stage, the falsification search last."""
    from mutagym.envs.gate import default_contract
    from mutagym.rewards.checker import default_checker
    k = tmp_path / "k.cu"
    k.write_text(RELU)
    proc = mutagym("eval", "--problem", "relu", str(k), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    [rec] = json.loads(proc.stdout)
    assert rec["checker"] == default_contract("relu")["gate"] and rec["accepted"]
    assert rec["gate"]["stages_run"] == ["suite", "pool", "corner", "fresh", "search"]
    assert rec["gate"]["checker_alone"]["checker"] == default_checker().version_id
