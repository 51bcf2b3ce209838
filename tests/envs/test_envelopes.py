"""Envelopes of the gate's inputs (issue 31 item 1): measured once, kept in the pool file or on
disk, handed to every stage."""

import gzip
import json
import shutil
import subprocess
import sys

from mutagym.envs.envelopes import EnvelopeStore, measure_pool_envelopes, read_pool_envelopes
from mutagym.envs.gate import SCHEDULES
from mutagym.envs.pool import PoolRegistry, corner_inputs, default_pool_file
from mutagym.rewards.checker import InputRef
from mutagym.substrates.catalog import load_problem


def test_the_shipped_pool_holds_an_envelope_for_every_input_the_pool_stage_judges():
    """Every input of every problem's pool stage (the file's and the coverage inputs) has one, so
    the gate measures nothing at judging time for them."""
    envelopes = read_pool_envelopes(default_pool_file())
    registry = PoolRegistry()
    for problem in ("relu", "softmax", "layernorm", "matmul", "cross_entropy"):
        p = load_problem(problem)
        ids = {r.id_for(p) for r in registry.get(problem).inputs}
        assert ids <= set(envelopes[problem]), problem
        assert all(0 <= share <= 1 for e in envelopes[problem].values() for share in e.used.values())


def test_measuring_writes_envelopes_by_input_id_and_resumes(tmp_path):
    pool = tmp_path / "pool.json.gz"
    doc = json.loads(gzip.decompress(default_pool_file().read_bytes()))
    doc["problems"] = {"relu": {**doc["problems"]["relu"], "envelopes": {}}}
    pool.write_bytes(gzip.compress(json.dumps(doc).encode()))
    counts = measure_pool_envelopes(pool, schedules=SCHEDULES)
    written = pool.read_bytes()
    assert counts["relu"] == len(PoolRegistry(pool).get("relu").inputs) + len(corner_inputs("relu")) > 0
    assert read_pool_envelopes(pool)["relu"]
    assert measure_pool_envelopes(pool, schedules=SCHEDULES) == counts and pool.read_bytes() == written


def test_a_missing_envelope_is_measured_and_kept_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("MUTAGYM_CACHE", str(tmp_path / "cache"))
    ref = InputRef(generator="sign_mixed", preset="=n=777", seed=3)
    store = EnvelopeStore(None, schedules=SCHEDULES)
    [(input_id, envelope)] = store.envelopes("relu", [ref]).by_input.items()
    assert input_id == "relu:sign_mixed:=n=777:3" and envelope.used == {"out": 0.0}
    again = EnvelopeStore(None, schedules=SCHEDULES)
    assert again._read_cache("relu") == {input_id: envelope}


def test_the_cli_measures_a_pool_file_and_names_a_missing_one(tmp_path):
    missing = subprocess.run([sys.executable, "-m", "mutagym", "envelopes", "--pool", str(tmp_path / "none.json.gz")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no such pool file" in missing.stderr
    pool = tmp_path / "pool.json.gz"
    shutil.copy(default_pool_file(), pool)
    done = subprocess.run([sys.executable, "-m", "mutagym", "envelopes", "--pool", str(pool), "--problems", "relu"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "relu" in done.stdout and "total" in done.stdout
