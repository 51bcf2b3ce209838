"""The harden report's plots, built from a real kill matrix (relu, three hand-written mutants) and
read back from their matplotlib artists: n on every bar, visible zeros, legends that name only
what is drawn, the stage times; and the report's mutant counts from pool to witnessed."""

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.lines import Line2D

from mutagym.mutants.harden import HardenSummary, harden_checker, scored_inputs
from mutagym.mutants.killmatrix import KillMatrixSettings, MutantRecord, run_killmatrix
from mutagym.rewards.checker import load_checker
from mutagym.rewards.report import (GATE_ROW, HEATMAP_CELLS, POOL_TABLE, blind_band, blind_band_figure,
                                    escape_figure, gate_score, heatmap_figure, mutant_counts,
                                    stage_time_figure, write_report)
from mutagym.rewards.scoring import load_killmatrix, score_checker
from testkit import local_ray, substrate_with

STAGES = {"mutant pool": 12.0, "kill matrix": 30.5, "suites, false rejects, scores": 0.0}


def mutants():
    return [
        MutantRecord("relu-returns-x", "relu", "input_domain", "hand-relu-identity",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")),
        MutantRecord("relu-plus-0.5", "relu", "arithmetic", "hand-offset",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) + 0.5f;")),
        # inside relu's tolerance on every input: not witnessed, in no denominator and no bar
        MutantRecord("relu-minus-tiny", "relu", "precision", "hand-tiny-offset",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f) - 1e-3f;")),
    ]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("plots")
    with local_ray():
        result = run_killmatrix(mutants(), KillMatrixSettings(
            out=str(out / "killmatrix"), generators=("uniform01", "sign_mixed"), presets=("official", "tiny"),
            shape_classes=(), schedules=("ascending",), preset_generators=None, progress=False),
            scored_inputs([load_checker("kernelbench")], ["relu"]))   # as harden runs it
    km = load_killmatrix(result)
    hardened = harden_checker(km, budget=1, date="2026-12-01")
    scores = {c.name: score_checker(c, km) for c in (load_checker("kernelbench"), hardened.checker)}
    # the pool table harden leaves beside the matrix: the three mutants, and two that never ran
    rows = [{"problem": "relu", "status": "compilable"}] * 3 + [
        {"problem": "relu", "status": "quarantined"}, {"problem": "relu", "status": "uncompilable"},
        {"problem": "softmax", "status": "quarantined"}]
    (out / POOL_TABLE).parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), out / POOL_TABLE)
    summary = HardenSummary(out, ["relu"], km.out, hardened, hardened.checker.save(out / "checkers"), scores,
                            None, 0.0, stage_seconds=dict(STAGES))
    scored = {**scores, GATE_ROW: gate_score(scores[hardened.checker.name], km, ["relu"])}
    return summary, km, scored, write_report(summary, km)


def test_every_escape_bar_says_escaped_of_witnessed_and_zeros_are_marked(report):
    _, km, scored, _ = report
    fig = escape_figure(scored)
    ax = fig.axes[0]
    families = [t.get_text() for t in ax.get_xticklabels()]
    assert families == ["arithmetic", "input_domain"]
    labels = [t for t in ax.texts]
    markers = [line for line in ax.lines if line.get_marker() == "^"]
    assert [c.get_label() for c in ax.containers] == list(scored)
    zeros = 0
    for container, (name, score) in zip(ax.containers, scored.items()):
        assert len(container) == len(families), name
        for bar, family in zip(container, families):
            rate = score.report.per_family[family]
            escaped = rate.total - rate.detected
            assert bar.get_height() == pytest.approx(escaped / rate.total), (name, family)
            centre = bar.get_x() + bar.get_width() / 2
            [label] = [t for t in labels if t.xy[0] == pytest.approx(centre)]
            assert label.get_text() == f"{escaped}/{rate.total}", (name, family)
            if escaped == 0:
                zeros += 1
                assert any(centre in line.get_xdata() for line in markers), (name, family)
    assert zeros >= len(families)            # the gate detects every witnessed mutant
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(scored)


def test_the_heatmap_legend_names_exactly_the_cells_drawn(report):
    _, km, _, _ = report
    fig = heatmap_figure(km, ["relu"])
    drawn = set(np.unique(fig.axes[0].images[0].get_array()).tolist())
    names = {value: what for value, what, _ in HEATMAP_CELLS}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [text.split(":")[0] for text in legend] == [names[v] for v in sorted(drawn)]
    assert 1 in drawn                       # every mutant is killed somewhere
    colours = ("grey", "blue", "red", "white")
    assert not any(c in fig.texts[0].get_text() for c in colours), fig.texts[0].get_text()


def _visible(line: Line2D) -> bool:
    xs = [x for x, y in zip(line.get_xdata(), line.get_ydata()) if math.isfinite(x) and math.isfinite(y)]
    has_line = line.get_linestyle() not in ("None", "none", "") and len(set(xs)) > 1
    has_marker = line.get_marker() not in (None, "None", "none", "") and len(xs) > 0
    return has_line or has_marker


def test_the_blind_band_legend_names_only_what_is_drawn(report):
    _, km, _, _ = report
    rows = blind_band(km)
    assert {r["reduction"] for r in rows} == {1}       # elementwise: one size, no line to draw
    ax = blind_band_figure(rows).axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert "relu: tolerance band (U[0,1))" in labels
    by_label = {line.get_label(): line for line in ax.lines}
    for label in labels:
        assert label in by_label and _visible(by_label[label]), label
    assert [t.get_text() for t in ax.get_legend().get_texts()] == labels


def test_time_by_stage_is_one_labelled_bar_per_stage(report):
    ax = stage_time_figure(STAGES).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(STAGES)
    assert [bar.get_width() for bar in ax.containers[0]] == list(STAGES.values())
    assert [t.get_text() for t in ax.texts] == [f"{s:.1f} s" for s in STAGES.values()]


def test_the_report_counts_mutants_from_pool_to_witnessed(report):
    summary, km, _, path = report
    counts = mutant_counts(km, ["relu"], summary.out / POOL_TABLE)
    assert counts == {"generated": 5, "uncompilable": 1, "quarantined": 1, "kill matrix": 3,
                      "witnessed": 2, "not witnessed": 1}
    text = path.read_text()
    assert "| quarantined | 1 | it builds, but crashes" in text
    assert "| witnessed | 2 | some valid input kills it" in text
    assert "| not witnessed | 1 | no valid input kills it" in text
    assert "| suites, false rejects, scores | 0.0 |" in text
    for png in ("heatmap", "escape_by_family", "blind_band", "time_by_stage"):
        assert (summary.out / f"{png}.png").stat().st_size > 0 and f"({png}.png)" in text
    assert "| kernelbench | 0/1 (0.0%) | 1/1 (100.0%) |" in text    # arithmetic caught, input_domain escapes


def test_a_checker_whose_inputs_the_matrix_lacks_is_not_measured(report, tmp_path):
    """sol-execbench's identity-affine inputs are not in this matrix: every table says "not
    measured" and the escape plot draws no bar for it (it used to read as 0 % detection, every
    family escaping), while the measured rows keep their figures."""
    summary, km, scored, _ = report
    sol = score_checker(load_checker("sol-execbench"), km)
    assert not sol.measured and sol.missing_inputs["relu"]
    assert all(s.measured for s in scored.values())
    partial = HardenSummary(tmp_path, ["relu"], km.out, summary.result, summary.checker_path,
                            {**summary.scores, "sol-execbench": sol}, None, 0.0, stage_seconds=dict(STAGES))
    text = write_report(partial, km).read_text()
    row = next(line for line in text.splitlines() if line.startswith("| sol-execbench | not measured"))
    assert row.split(" | ")[1:5] == ["not measured"] * 4 and row.rstrip(" |").endswith(
        str(sum(len(v) for v in sol.missing_inputs.values())))
    assert "| sol-execbench | not measured | not measured |" in text.split("## Escape by family")[1]
    assert "- sol-execbench: not measured" in text
    assert "| kernelbench | 0/1 (0.0%) | 1/1 (100.0%) |" in text
    ax = escape_figure({**scored, "sol-execbench": sol}).axes[0]
    assert [c.get_label() for c in ax.containers] == list(scored)
    assert "sol-execbench: not measured" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert {row["checker"]: row["measured"] for row in partial.rows()}["sol-execbench"] is False
    assert next(r for r in partial.rows() if r["checker"] == "sol-execbench")["detection"] is None
