"""Shape classes in the kill matrix (issue 14): which class witnessed what, on real Ray and g++."""

import sys

import pyarrow.parquet as pq
import pytest

from mutagym.mutants.killmatrix import (INPUTS_SCHEMA, KillMatrixSettings, MutantRecord, candidate_inputs,
                                        run_killmatrix, shape_class_table, shape_classes_for, summary_table)
from mutagym.rewards.shapes import COSTLY_CLASSES, shape_classes
from mutagym.substrates.catalog import load_problem
from testkit import local_ray, substrate_with

TAIL = "out[i] = relu_op(x[i]);"
#: Three classes, one of which (n % 4 == 2) the mutant below is wrong on; relu's presets are
#: n = 65536 (official), 50021 (remainder, n % 4 == 1) and 3 (tiny): none has n % 4 == 2.
CLASSES = ("mod4_1", "mod4_2", "mod8_3")
SETTINGS = dict(generators=("sign_mixed",), presets=("tiny", "remainder"), shape_classes=CLASSES,
                schedules=("ascending",), progress=False)


def mutants():
    return [
        # wrong only in the scalar tail of an n % 4 == 2 input
        MutantRecord("relu-tail-mod4-2", "relu", "boundary", "hand-tail-mod4-2",
                     substrate_with("relu", TAIL, "out[i] = relu_op(x[i]) + ((n & 3) == 2 ? 1.0f : 0.0f);")),
        MutantRecord("relu-returns-x", "relu", "input_domain", "hand-relu-identity",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")),
    ]


@pytest.fixture(scope="module")
def cluster():
    with local_ray(module=__name__):     # test helpers run on workers
        yield


@pytest.fixture(scope="module")
def run(cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("km_shapes")
    return run_killmatrix(mutants(), KillMatrixSettings(out=str(out), **SETTINGS))


class TestCandidates:
    def test_default_is_every_cheap_class_of_the_problem(self):
        """With neither presets nor classes named, the cheap classes the problem offers are drawn
        (as the pool's coverage inputs: COSTLY_CLASSES are left to the gate's fresh stage)."""
        p = load_problem("sum_dim")
        classes = shape_classes_for(p, KillMatrixSettings())
        assert classes and set(classes) == set(shape_classes(p)) - set(COSTLY_CLASSES)
        assert "many_rows" in shape_classes(p) and "many_rows" not in classes
        ids = [g.id for g in candidate_inputs(p, KillMatrixSettings(generators=("uniform01",)))]
        drawn = [i for i in ids if ":@" in i]
        assert len(drawn) == len(classes) and all(":sign_mixed:@" in i for i in drawn)

    def test_named_presets_name_the_shapes(self):
        """Naming presets (and no classes) keeps the old candidate set; a class named is drawn,
        one the problem does not offer is skipped, an unknown one is an error."""
        p = load_problem("relu")
        plain = candidate_inputs(p, KillMatrixSettings(generators=("uniform01",), presets=("tiny",)))
        assert [g.id for g in plain] == ["relu:uniform01:tiny:0"]
        assert "many_rows" not in shape_classes(p)
        both = candidate_inputs(p, KillMatrixSettings(generators=("uniform01",), presets=("tiny",),
                                                      shape_classes=("mod4_2", "many_rows"),
                                                      shape_generators=("normal", "sign_mixed")))
        assert [g.id.rsplit(":", 1)[0] for g in both] == [
            "relu:uniform01:tiny", "relu:normal:@mod4_2", "relu:sign_mixed:@mod4_2"]
        assert both[1].dims["n"] % 4 == 2 and both[1].dims == both[2].dims
        with pytest.raises(KeyError, match="unknown shape class 'mod5_2'"):
            candidate_inputs(p, KillMatrixSettings(shape_classes=("mod5_2",)))

    def test_costly_preset_takes_its_generators_only(self):
        """A preset of PRESET_GENERATORS is drawn with its generators only (of those asked for),
        every other preset with every generator; None lifts the restriction, an unknown name is an
        error."""
        from mutagym.mutants.killmatrix import PRESET_GENERATORS
        p = load_problem("softmax")
        asked = ("normal", "uniform01", "one_hot", "sparse")
        ids = [g.id for g in candidate_inputs(p, KillMatrixSettings(generators=asked, shape_classes=()))]

        def drawn(preset, among=ids):
            return sorted(i.split(":")[1] for i in among if f":{preset}:" in i)
        assert drawn("large_reduction") == sorted(set(asked) & set(PRESET_GENERATORS["large_reduction"])) == ["sparse"]
        assert drawn("official") == sorted(set(asked) & set(PRESET_GENERATORS["official"])) == ["sparse", "uniform01"]
        assert "tiny" not in PRESET_GENERATORS and drawn("tiny") == sorted(asked)
        every = [g.id for g in candidate_inputs(p, KillMatrixSettings(generators=asked, shape_classes=(),
                                                                      preset_generators=None))]
        assert drawn("large_reduction", every) == drawn("official", every) == sorted(asked)
        with pytest.raises(KeyError, match="unknown generator 'gauss' in preset_generators"):
            candidate_inputs(p, KillMatrixSettings(preset_generators={"tiny": ("gauss",)}))

    def test_deterministic_and_the_pools_instance(self):
        """Same settings, same inputs (ids and arrays); seed 0 of a class is the instance the
        pool of record's coverage input draws (the cheapest of SHAPE_SEEDS seeds)."""
        import numpy as np
        from mutagym.envs.pool import COSTLY_CLASSES, SHAPE_GENERATOR, coverage_inputs
        from mutagym.mutants.killmatrix import SHAPE_GENERATORS
        assert SHAPE_GENERATORS == (SHAPE_GENERATOR,)
        p = load_problem("relu")
        a, b = (candidate_inputs(p, KillMatrixSettings(generators=("normal",))) for _ in range(2))
        assert [g.id for g in a] == [g.id for g in b]
        assert all(np.array_equal(x.inputs["x"], y.inputs["x"]) for x, y in zip(a, b))
        drawn = {g.id for g in a if ":@" in g.id}
        coverage = {r.id_for("relu") for r in coverage_inputs("relu")
                    if r.preset.startswith("@") and r.preset[1:] not in COSTLY_CLASSES}   # the matrix's classes
        assert coverage and coverage <= drawn
        other = {g.id for g in candidate_inputs(p, KillMatrixSettings(generators=("normal",), seeds=(1,)))
                 if ":@" in g.id}
        assert len(other) == len(drawn) and not other & drawn


class TestWitnessesByClass:
    def test_inputs_table_names_the_shape_class(self, run):
        assert run.inputs.schema.equals(INPUTS_SCHEMA)
        rows = run.inputs.to_pylist()
        assert {r["shape_class"] for r in rows} == {"tiny", "remainder", *CLASSES}
        for r in rows:
            assert r["shape_class"] == (r["preset"][1:] if r["preset"].startswith("@") else r["preset"])
        assert all(r["valid"] for r in rows)
        assert pq.read_table(run.out / "inputs.parquet").column("shape_class").to_pylist() == \
            run.inputs.column("shape_class").to_pylist()

    def test_a_mod4_2_fault_is_witnessed_by_its_class_only(self, run):
        shape_of = {r["id"]: r["shape_class"] for r in run.inputs.to_pylist()}
        w = run.witnesses()
        assert w["relu-tail-mod4-2"] and {shape_of[i] for i in w["relu-tail-mod4-2"]} == {"mod4_2"}
        # the identity relu needs a negative input: every class's instance is large enough to hold
        # one (`representative_seed`; the cheapest mod4_2 draw, n = 2, held none)
        assert {shape_of[i] for i in w["relu-returns-x"]} == {"tiny", "remainder", *CLASSES}

    def test_shape_summary(self, run):
        rows = {r["shape_class"]: r for r in run.shape_summary()}
        assert [r["shape_class"] for r in run.shape_summary()] == ["remainder", "tiny", *CLASSES]
        assert rows["mod4_2"] == {"shape_class": "mod4_2", "kind": "class", "problems": 1, "valid_inputs": 1,
                                  "witnessed": 2, "only": 1}
        for c in ("mod4_1", "mod8_3", "tiny", "remainder"):
            assert rows[c]["witnessed"] == 1 and rows[c]["only"] == 0
        assert rows["tiny"]["kind"] == "preset"
        from rich.console import Console
        console = Console(width=200, record=True)
        console.print(summary_table(run))
        text = console.export_text()
        assert "survived everything" in text and "witnessed only here" in text and "mod4_2" in text
        assert shape_class_table(run).row_count == 5

    def test_more_classes_resume_the_stored_cells(self, run):
        """A rerun in the same folder with one more class computes only that class's cells."""
        again = run_killmatrix(mutants(), KillMatrixSettings(out=str(run.out), **{
            **SETTINGS, "shape_classes": (*CLASSES, "mod8_2")}))
        assert again.reused_cells == run.outcomes.num_rows and again.computed_cells == 2
        shape_of = {r["id"]: r["shape_class"] for r in again.inputs.to_pylist()}
        assert {shape_of[i] for i in again.witnesses()["relu-tail-mod4-2"]} == {"mod4_2", "mod8_2"}
        same = run_killmatrix(mutants(), KillMatrixSettings(out=str(run.out), **SETTINGS))
        assert same.computed_cells == 0
        assert same.outcomes.equals(run.outcomes) and same.inputs.equals(run.inputs)


def test_cli_names_the_shape_classes(tmp_path):
    """`mutagym killmatrix --shape-classes` draws the named classes beside the named presets."""
    import subprocess
    import pyarrow as pa
    pool = tmp_path / "pool.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": m.id, "problem": m.problem, "family": m.family, "rule": m.rule,
                                          "source": m.source} for m in mutants()]), pool)
    out = tmp_path / "km"
    proc = subprocess.run([sys.executable, "-m", "mutagym", "killmatrix", "--problems", "relu", "--pool", str(pool),
                           "--out", str(out), "--num-cpus", "1", "--generators", "sign_mixed", "--presets", "tiny",
                           "--shape-classes", "mod4_2", "--schedules", "ascending", "--no-progress"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert pq.read_table(out / "inputs.parquet").column("shape_class").to_pylist() == ["mod4_2", "tiny"]
    assert "witnessed only here" in proc.stdout and "mod4_2" in proc.stdout
