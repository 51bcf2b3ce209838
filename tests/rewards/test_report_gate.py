"""The harden report's gate row, shape-class table and checks section, on a real kill matrix with
two shape classes."""

import re

import pytest

from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, run_killmatrix
from mutagym.rewards.checker import load_checker
from mutagym.mutants.harden import HardenSummary, harden_checker, scored_inputs
from mutagym.rewards.report import GATE_ROW, check_rows, gate_score, shape_rows, write_report
from mutagym.rewards.scoring import load_killmatrix, score_checker
from testkit import local_ray, substrate_with


def mutants():
    return [
        MutantRecord("relu-returns-x", "relu", "input_domain", "hand-relu-identity",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")),
        MutantRecord("relu-plus-0.5", "relu", "arithmetic", "hand-offset",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) + 0.5f;")),
        # wrong only in the scalar tail of an n % 4 == 2 input: no preset of relu has one
        MutantRecord("relu-tail-mod4-2", "relu", "boundary", "hand-tail-mod4-2",
                     substrate_with("relu", "out[i] = relu_op(x[i]);",
                                    "out[i] = relu_op(x[i]) + ((n & 3) == 2 ? 1.0f : 0.0f);")),
        # right values in every order, but thread 1 reads thread 0's output unordered: a data race only
        MutantRecord("relu-reads-a-neighbour", "relu", "synchronization", "hand-unordered-read",
                     substrate_with("relu", "        out[i] = relu_op(x[i]);\n    }\n",
                                    "        out[i] = relu_op(x[i]);\n    }\n"
                                    "    if (tid == 1 && n > 4) out[0] = fmaxf(out[0], 0.0f);\n")),
    ]


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    with local_ray():
        out = tmp_path_factory.mktemp("report")
        result = run_killmatrix(mutants(), KillMatrixSettings(
            out=str(out / "killmatrix"), generators=("uniform01", "sign_mixed"), presets=("official", "tiny"),
            shape_classes=("mod4_1", "mod4_2"), schedules=("ascending",), preset_generators=None, progress=False),
            scored_inputs([load_checker("kernelbench")], ["relu"]))   # as harden runs it
    km = load_killmatrix(result)
    # one input per problem: no single input kills all three (the n % 4 == 2 one has no negative value)
    hardened = harden_checker(km, budget=1, date="2026-12-01")
    checkers = [load_checker("kernelbench"), hardened.checker]
    scores = {c.name: score_checker(c, km) for c in checkers}
    s = HardenSummary(out, ["relu"], km.out, hardened, hardened.checker.save(out / "checkers"), scores, None, 0.0)
    s.report = write_report(s, km)
    return s, km


def test_gate_detects_every_witnessed_mutant_the_suite_misses(summary):
    s, km = summary
    hardened = s.scores[s.result.checker.name]
    gate = gate_score(hardened, km, ["relu"])
    assert sorted(gate.killed) == km.witnessed() == sorted(m.id for m in mutants())
    assert gate.detection == 1.0 and hardened.detection < 1.0
    assert gate.killed >= hardened.killed and gate.false_rejects is None


def test_report_lists_the_gate_next_to_the_presets(summary):
    s, km = summary
    text = s.report.read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| ([\w.-]+) \| ([\d.]+% \(\d+/\d+\)) \|", text, re.M)}
    assert {"kernelbench", s.result.checker.name, GATE_ROW} <= set(rows)
    assert rows[GATE_ROW] == "100.0% (4/4)" and rows[s.result.checker.name] != rows[GATE_ROW]
    assert "fresh stage" in text and "bench_gate_detection" in text


def test_report_says_which_shape_class_witnessed_what(summary):
    s, km = summary
    rows = {r["shape_class"]: r for r in shape_rows(km)}
    assert set(rows) == {"official", "tiny", "mod4_1", "mod4_2"}
    assert rows["mod4_2"]["kind"] == "class" and rows["mod4_2"]["only"] == 1
    assert rows["official"]["kind"] == "preset" and rows["official"]["only"] == 0
    text = s.report.read_text()
    assert "## Shape classes" in text
    r = rows["mod4_2"]
    assert f"| mod4_2 | class | 1 | {r['valid_inputs']} | {r['witnessed']} | 1 |" in text


def test_report_says_what_the_emulators_checks_catch(summary):
    """The race mutant is counted under data_race, as caught by the checks only (no cell shows a
    wrong output), and its rule row says which checker detects it."""
    s, km = summary
    outcomes = {c["outcome"]: c for c in km.outcomes_of["relu-reads-a-neighbour"]}
    assert "data_race" in outcomes and "wrong" not in outcomes
    by_outcome, by_rule = check_rows(km, ["relu"], s.scores)
    race = next(r for r in by_outcome if r["outcome"] == "data_race")
    assert race["matrix"] == 1 and race["only"] == 1 and race["quarantined"] is None   # no pool table here
    rule = next(r for r in by_rule if r["rule"] == "hand-unordered-read")
    assert (rule["matrix"], rule["witnessed"], rule["caught"], rule["only"]) == (1, 1, 1, 1)
    assert all(r["rule"] != "hand-relu-identity" for r in by_rule)      # a wrong output only: not listed
    text = s.report.read_text()
    assert "## What the emulator's checks catch" in text
    assert "| data_race | - | 1 | 1 |" in text
    detected = rule["detected"]["kernelbench"]
    assert f"| hand-unordered-read | - | 1 | 1 | 1 | 1 | {detected}/1 |" in text
