"""`harden --field` (issue 17 item 3): the wrong kernels of a field-fault set are a second fault
population of the kill matrix, their witnesses candidate inputs the cover may choose, their
correct kernels more kernels a checker must not reject; a run without a set is as before."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mutagym.mutants.field import field_id, load_field_faults
from mutagym.mutants.harden import harden
from mutagym.mutants.killmatrix import MUTANTS_SCHEMA, MutantRecord
from mutagym.rewards.field_faults import FieldKernel, load_field_set, write_field_set
from testkit import local_ray, substrate_with

PROBE = Path(__file__).resolve().parents[2] / "benchmarks" / "probe"
FILES = ("relu_vec4_partial_tail.cu", "softmax_warp_registers.cu", "relu_scalar_512.cu")
SETTINGS = dict(presets=("official",), generators=("uniform01", "normal"), schedules=("ascending",),
                checkers=["kernelbench"], progress=False, workers=2)
TABLES = ("mutants.parquet", "inputs.parquet", "outcomes.parquet")
#: A field fault whose witness is of a value family (`rewards.generators.FAMILIES`), not a generator.
RETURNS_X = FieldKernel("relu_returns_x.cu", "relu", "wrong",
                        substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;"),
                        kind="identity", fault="returns its input", witness="relu:negative_rows:official:0")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """harden on relu and softmax without a field set, then in the same folder with two wrong and
    one correct kernel of the probe and `RETURNS_X` (the second run reuses the first's pool and cells)."""
    field = tmp_path_factory.mktemp("field")
    write_field_set(field, [k for k in load_field_set(PROBE) if k.file in FILES] + [RETURNS_X])
    out = tmp_path_factory.mktemp("harden")
    with local_ray(num_cpus=2):
        plain = harden(["relu", "softmax"], out, **SETTINGS)
        tables = {name: pq.read_table(out / "killmatrix" / name) for name in TABLES}
        report = plain.report.read_text()
        fielded = harden(["relu", "softmax"], out, field_sets=[str(field)], **SETTINGS)
    return field, plain, tables, report, fielded


def test_field_faults_are_a_population_of_the_matrix(runs):
    field, _, _, _, fielded = runs
    wrong = [k for k in load_field_set(field) if k.expected == "wrong"]
    rows = {r["mutant_id"]: r for r in pq.read_table(fielded.killmatrix / "mutants.parquet").to_pylist()}
    for k in wrong:
        r = rows[field_id(k)]
        assert (r["population"], r["family"], r["rule"]) == ("field", "field", k.kind)
        assert k.witness in r["witnesses"], r["witnesses"]
    assert {r["population"] for r in rows.values()} == {"mutant", "field"}
    inputs = {r["id"]: r for r in pq.read_table(fielded.killmatrix / "inputs.parquet").to_pylist()}
    assert all(inputs[k.witness]["valid"] for k in wrong)


def test_the_cover_covers_the_field_faults(runs):
    """Each field fault is killed by its problem's shipped suite (a witness of it was chosen where
    no other input kills it)."""
    _, _, _, _, fielded = runs
    hardened = fielded.scores["hardened"]
    ids = [field_id(k) for k in fielded.field_faults.wrong]
    assert ids and all(m in hardened.killed for m in ids)
    assert fielded.field_rejects["hardened"] == [] and fielded.field_rejects["gate"] == []


def test_the_report_shows_both_populations(runs):
    _, _, _, report, fielded = runs
    text = fielded.report.read_text()
    assert "## Fault populations" in text
    assert "| hardened | mutant |" in text and "| hardened | field | 100.0% (3/3) |" in text
    assert "| kernelbench | field |" in text and "| gate | field |" in text
    assert "## Fault populations" not in report


def test_a_mutant_only_run_is_unchanged_but_for_the_population_column(runs):
    """Without a field set every record is a mutant, and the field run changes none of the
    mutant-only run's cells or inputs: it only adds its own and the witnesses'."""
    _, plain, tables, _, fielded = runs
    mutants = tables["mutants.parquet"]
    assert mutants.schema.names == MUTANTS_SCHEMA.names and set(mutants.column("population").to_pylist()) == {"mutant"}
    after = {name: pq.read_table(fielded.killmatrix / name).to_pylist() for name in TABLES}
    cells = {(r["mutant_id"], r["input_id"], r["schedule"]): r for r in after["outcomes.parquet"]}
    assert all(cells[(r["mutant_id"], r["input_id"], r["schedule"])] == r
               for r in tables["outcomes.parquet"].to_pylist())
    inputs = {r["id"]: r for r in after["inputs.parquet"]}
    assert all(inputs[r["id"]] == r for r in tables["inputs.parquet"].to_pylist())
    assert "field_sets" not in plain.result.checker.provenance["settings"]


def test_a_text_both_wrong_and_correct_is_named(tmp_path):
    [k] = [k for k in load_field_set(PROBE) if k.file == FILES[0]]
    write_field_set(tmp_path / "a", [k])
    write_field_set(tmp_path / "b", [k.__class__(**{**k.__dict__, "expected": "correct", "numerics": "n",
                                                    "inputs": (k.witness,), "kind": "", "fault": "",
                                                    "witness": ""})])
    with pytest.raises(ValueError, match="is correct for relu, but the same text .* is wrong"):
        load_field_faults([tmp_path / "a", tmp_path / "b"], ["relu"])
    assert load_field_faults([tmp_path / "a"], ["softmax"]).wrong == ()


def test_a_record_of_an_unknown_population_is_refused():
    with pytest.raises(ValueError, match="population must be one of"):
        MutantRecord("m", "relu", "f", "r", "src", population="other")
