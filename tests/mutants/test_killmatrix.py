"""The kill matrix on real Ray: outcomes, witnesses, determinism, resume, a killed worker, attaching."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray

from mutagym.mutants.killmatrix import (KillMatrixSettings, MutantRecord, as_records, run_killmatrix)
from mutagym.mutants.ray_pool import RayPool, TaskFailedError, WorkerLostError
from mutagym.substrates.catalog import load_problem
from testkit import local_ray, substrate_with

TABLES = ("mutants.parquet", "inputs.parquet", "outcomes.parquet")
#: Every schedule on every input (the plan is tested on its own, against this full run).
SMALL = dict(generators=("uniform01", "sign_mixed", "large_offset", "affine_perturbed"),
             presets=("tiny", "remainder"), schedules=("ascending", "descending"),
             later_schedules_max_elements=None, preset_generators=None, progress=False)



def hand_mutants():
    """Hand-written mutants of catalog substrates, one per classic blind spot."""
    return [
        MutantRecord("relu-returns-x", "relu", "input_domain", "hand-relu-identity",
                     substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")),
        MutantRecord("relu-tail-oob", "relu", "boundary", "hand-tail-oob",
                     substrate_with("relu", "out[i] = relu_op(x[i]);", "out[i] = relu_op(x[i + 4]);")),
        MutantRecord("softmax-no-max", "softmax", "input_domain", "hand-no-max-subtraction",
                     substrate_with("softmax", "expf(xr[c] - m)", "expf(xr[c])")),
        MutantRecord("layernorm-no-weight", "layernorm", "arithmetic", "hand-drop-weight",
                     substrate_with("layernorm", "xhat * weight[c] + bias[c]", "xhat + bias[c]")),
    ]


def hanging_mutant():
    """A relu that spins forever on the tiny preset (n == 3): a slow task to kill a worker under."""
    return MutantRecord("relu-hangs-tiny", "relu", "synchronization", "hand-spin",
                        substrate_with("relu", "const int tid = blockIdx.x * blockDim.x + threadIdx.x;",
                             "const int tid = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (n == 3) { volatile float s = 0.0f; while (s >= 0.0f) s += 1.0f; }"))


def test_docstrings_run():
    """The examples in killmatrix and ray_pool run (the ones that need a cluster are skipped)."""
    import doctest
    import mutagym.mutants.killmatrix as km
    import mutagym.mutants.ray_pool as rp
    for module in (km, rp):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def tables(out):
    return {name: pq.read_table(Path(out) / name) for name in TABLES}


@pytest.fixture(scope="module")
def cluster():
    """One small local Ray cluster (2 CPUs) for the module, always shut down."""
    with local_ray(module=__name__):     # test helpers run on workers
        yield


@pytest.fixture(scope="module")
def first_run(cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("km") / "a"
    return run_killmatrix(hand_mutants(), KillMatrixSettings(out=str(out), **SMALL))


class TestOutcomes:
    def test_tables_and_manifest(self, first_run):
        """The three tables and the manifest exist; the manifest's hashes are the files' hashes."""
        import hashlib
        manifest = json.loads((first_run.out / "manifest.json").read_text())
        for name in TABLES:
            assert manifest["tables"][name] == hashlib.sha256((first_run.out / name).read_bytes()).hexdigest()
        assert manifest["versions"]["ray"] == ray.__version__
        assert manifest["settings"]["schedules"] == ["ascending", "descending"]
        o = first_run.outcomes
        assert o.column_names == ["mutant_id", "input_id", "schedule", "outcome", "max_abs", "max_rel",
                                  "mismatch_ratio", "tol_needed", "tol_needed_p99", "message"]
        # 4 mutants x 8 valid inputs x 2 schedules
        assert o.num_rows == 4 * 8 * 2 and first_run.computed_cells == 64
        assert first_run.inputs.column_names[:7] == ["id", "problem", "generator", "preset", "seed",
                                                     "valid", "reason"]

    def test_blind_spots_and_witnesses(self, first_run):
        """uniform01 misses the ReLU, max-subtraction and affine faults; the targeted inputs witness them."""
        w = first_run.witnesses()
        assert not any(":uniform01:" in i for i in w["relu-returns-x"])
        assert any(":sign_mixed:" in i for i in w["relu-returns-x"])
        assert w["softmax-no-max"] and all(":large_offset:" in i for i in w["softmax-no-max"])
        assert not any(":uniform01:" in i for i in w["layernorm-no-weight"])
        assert any(":affine_perturbed:" in i for i in w["layernorm-no-weight"])

    def test_faults_are_outcomes(self, first_run):
        """An out-of-bounds read is a memory_fault cell with the runtime's message, not a task failure."""
        rows = [r for r in first_run.outcomes.to_pylist() if r["mutant_id"] == "relu-tail-oob"]
        assert {r["outcome"] for r in rows} >= {"memory_fault"}
        fault = next(r for r in rows if r["outcome"] == "memory_fault")
        assert "read past the end of input 'x'" in fault["message"] and fault["max_abs"] is None

    def test_killed_cells_carry_statistics(self, first_run):
        """A killed cell has its error statistics and the comparator's message."""
        killed = [r for r in first_run.outcomes.to_pylist() if r["outcome"] == "wrong"]
        assert killed and all(r["max_abs"] > 0 and r["mismatch_ratio"] > 0 and r["message"] for r in killed)
        assert any("outside atol" in r["message"] for r in killed)
        assert any("NaN/Inf" in r["message"] and r["max_abs"] == float("inf") for r in killed)

    def test_cells_speak_the_judging_cores_words(self, first_run, tmp_path):
        """Cells use the outcomes a submitted kernel gets (`ok`, `wrong`, faults); a folder written
        with the earlier words (`killed`, `survived`) reads the same."""
        import shutil

        import pyarrow.parquet as pq

        from mutagym.rewards.judging import OUTCOMES
        from mutagym.rewards.scoring import load_killmatrix
        assert set(first_run.outcomes.column("outcome").to_pylist()) <= set(OUTCOMES)
        old = tmp_path / "old"
        shutil.copytree(first_run.out, old)
        table = pq.read_table(old / "outcomes.parquet")
        words = [{"wrong": "killed", "ok": "survived"}.get(o, o) for o in table.column("outcome").to_pylist()]
        pq.write_table(table.set_column(table.schema.get_field_index("outcome"), "outcome",
                                        pa.array(words, pa.string())), old / "outcomes.parquet")
        assert load_killmatrix(old).outcomes == load_killmatrix(first_run.out).outcomes

    def test_tolerance_needed_agrees_with_the_verdict(self, first_run):
        """Cells record the tolerance they need, so other checkers can re-score them exactly."""
        from mutagym.substrates.catalog import load_problem
        ran = [r for r in first_run.outcomes.to_pylist() if r["outcome"] in ("wrong", "ok")]
        problem_of = {m["mutant_id"]: m["problem"] for m in first_run.mutants.to_pylist()}
        assert ran
        for r in ran:
            t = load_problem(problem_of[r["mutant_id"]]).spec.tolerance
            assert t.atol == t.rtol and t.matched_ratio == 1.0
            assert (r["outcome"] == "wrong") == (r["tol_needed"] > t.atol), r
            assert r["tol_needed_p99"] <= r["tol_needed"]

    def test_summary(self, first_run):
        """Per problem and family: every hand mutant is witnessed."""
        rows = first_run.summary()
        assert {(r["problem"], r["family"]) for r in rows} == {
            ("layernorm", "arithmetic"), ("relu", "boundary"), ("relu", "input_domain"),
            ("softmax", "input_domain")}
        assert all(r["witnessed"] == r["mutants"] == 1 and r["survived_everything"] == r["other"] == 0
                   for r in rows)


class TestDeterminismAndResume:
    def test_two_runs_identical(self, first_run, tmp_path):
        """A second run from scratch gives byte-identical tables."""
        again = run_killmatrix(hand_mutants(), KillMatrixSettings(out=str(tmp_path / "b"), **SMALL))
        assert again.computed_cells == first_run.computed_cells
        for name, table in tables(first_run.out).items():
            assert table.equals(tables(again.out)[name]), name
            assert (first_run.out / name).read_bytes() == (again.out / name).read_bytes(), name

    def test_split_tasks_same_tables(self, first_run, tmp_path):
        """Splitting each mutant's inputs over several tasks changes the parts, not the tables."""
        split = run_killmatrix(hand_mutants(), KillMatrixSettings(out=str(tmp_path / "s"), inputs_per_task=3,
                                                                  **SMALL))
        assert len(list(split.out.glob("outcomes/*/*.parquet"))) == 4 * 3      # 8 inputs -> 3 + 3 + 2
        for name, table in tables(first_run.out).items():
            assert table.equals(tables(split.out)[name]), name

    def test_later_schedules_run_on_cheap_inputs_only(self, first_run, tmp_path):
        """Past `later_schedules_max_elements` an input runs under the first schedule alone; its
        cells there, and every cell of the cheap inputs, are the full run's."""
        from mutagym.rewards.shapes import cost
        from mutagym.substrates.catalog import load_problem
        limit = 64
        part = run_killmatrix(hand_mutants(), KillMatrixSettings(out=str(tmp_path / "p"), **{
            **SMALL, "later_schedules_max_elements": limit}))
        inputs = {r["id"]: r for r in first_run.inputs.to_pylist()}

        def cheap(input_id):
            r = inputs[input_id]
            dims = load_problem(r["problem"]).preset(r["preset"])
            return cost(load_problem(r["problem"]), dims).elements <= limit

        full = {(r["mutant_id"], r["input_id"], r["schedule"]): r for r in first_run.outcomes.to_pylist()}
        kept = {k for k in full if k[2] == "ascending" or cheap(k[1])}
        assert {cheap(k[1]) for k in full} == {True, False}      # both kinds of input are there
        got = {(r["mutant_id"], r["input_id"], r["schedule"]): r for r in part.outcomes.to_pylist()}
        assert set(got) == kept and part.computed_cells == len(kept) < len(full)
        assert all(got[k] == full[k] for k in kept)
        assert json.loads((part.out / "manifest.json").read_text())["settings"]["later_schedules_max_elements"] == limit

    def test_resume_computes_only_missing_cells(self, first_run, tmp_path):
        """Delete two part files: the rerun computes exactly their cells and reuses the rest."""
        out = tmp_path / "c"
        shutil.copytree(first_run.out, out)
        parts = sorted(out.glob("outcomes/*/*.parquet"))
        assert len(parts) == 4                        # one task per mutant
        lost = sum(pq.read_table(p).num_rows for p in parts[:2])
        for p in parts[:2]:
            p.unlink()
        for name in TABLES:
            (out / name).unlink()
        resumed = run_killmatrix(hand_mutants(), KillMatrixSettings(out=str(out), **SMALL))
        assert resumed.computed_cells == lost and resumed.reused_cells == 64 - lost
        for name, table in tables(first_run.out).items():
            assert table.equals(tables(out)[name]), name

    def test_changed_source_is_recomputed(self, first_run, tmp_path):
        """Same id, edited source: only that mutant's cells are computed again."""
        out = tmp_path / "e"
        shutil.copytree(first_run.out, out)
        edited = [MutantRecord(m.id, m.problem, m.family, m.rule, m.source + "\n// edited\n")
                  if m.id == "relu-returns-x" else m for m in hand_mutants()]
        again = run_killmatrix(edited, KillMatrixSettings(out=str(out), **SMALL))
        assert again.computed_cells == 16 and again.reused_cells == 48

    def test_complete_run_computes_nothing(self, first_run, tmp_path):
        """A rerun over a finished folder starts no task."""
        out = tmp_path / "d"
        shutil.copytree(first_run.out, out)
        again = run_killmatrix(hand_mutants(), KillMatrixSettings(out=str(out), **SMALL))
        assert again.computed_cells == 0 and again.reused_cells == 64


class TestSpecialMutants:
    def test_uncompilable_mutant_and_ceiling(self, cluster, tmp_path):
        """A mutant that does not build gets compile_error cells (not a task failure, not witnessed);
        `ceiling=True` writes the problem's validity ceiling."""
        broken = MutantRecord("relu-broken", "relu", "arithmetic", "hand-syntax",
                              substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f)"))
        r = run_killmatrix([broken, hand_mutants()[0]], KillMatrixSettings(
            out=str(tmp_path / "km"), generators=("sign_mixed",), presets=("tiny",),
            schedules=("ascending",), ceiling=True, progress=False))
        cells = {row["mutant_id"]: row for row in r.outcomes.to_pylist()}
        assert cells["relu-broken"]["outcome"] == "compile_error" and cells["relu-broken"]["message"]
        [row] = [x for x in r.summary() if x["family"] == "arithmetic"]
        assert row["other"] == 1 and row["witnessed"] == 0
        ceiling = pq.read_table(tmp_path / "km" / "ceilings.parquet").to_pylist()
        assert ceiling == [{"problem": "relu", "preset": "official", "seed": 0,
                            "largest_valid_scale": 1e12, "first_invalid_scale": None, "reason": ""}]


class TestWorkerDeath:
    def test_killed_worker_is_retried_and_nothing_is_lost(self, cluster, tmp_path):
        """SIGKILL the worker running a task mid-run: Ray retries it; the matrix equals an undisturbed run."""
        mutants = [hanging_mutant(), hand_mutants()[0]]
        settings = dict(generators=("uniform01", "sign_mixed"), presets=("tiny", "remainder"),
                        schedules=("ascending", "descending"), timeout_s=1.0, progress=False)
        calm = run_killmatrix(mutants, KillMatrixSettings(out=str(tmp_path / "calm"), **settings))
        assert "timeout" in set(calm.outcomes.column("outcome").to_pylist())

        pid_dir = tmp_path / "pids"
        box = {}

        def run():
            try:
                box["result"] = run_killmatrix(mutants, KillMatrixSettings(
                    out=str(tmp_path / "hit"), pid_dir=str(pid_dir), **settings))
            except BaseException as e:  # surfaced below
                box["error"] = e

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.time() + 120
        victim = None
        while victim is None and time.time() < deadline and thread.is_alive():
            files = list(pid_dir.glob("relu-hangs-tiny.*")) if pid_dir.exists() else []
            if files:
                victim = int(files[0].name.rsplit(".", 1)[1])
            else:
                time.sleep(0.02)
        assert victim is not None, "the hanging mutant's task never started"
        os.kill(victim, signal.SIGKILL)
        thread.join(timeout=300)
        assert not thread.is_alive()
        assert "error" not in box, box.get("error")
        pids = {int(p.name.rsplit(".", 1)[1]) for p in pid_dir.glob("relu-hangs-tiny.*")}
        assert victim in pids and len(pids) >= 2          # the task ran again on another worker
        for name, table in tables(calm.out).items():
            assert table.equals(tables(tmp_path / "hit")[name]), name


    def test_worker_lost_for_good_names_the_task_and_resumes(self, cluster, tmp_path):
        """max_retries=0 and a killed worker: WorkerLostError names the mutant; a rerun computes only
        that task's cells."""
        mutants = [hanging_mutant(), hand_mutants()[0]]
        settings = dict(generators=("uniform01", "sign_mixed"), presets=("tiny", "remainder"),
                        schedules=("ascending", "descending"), later_schedules_max_elements=None,
                        preset_generators=None, timeout_s=1.0, progress=False)
        pid_dir, box = tmp_path / "pids", {}

        def run():
            try:
                run_killmatrix(mutants, KillMatrixSettings(out=str(tmp_path / "km"), pid_dir=str(pid_dir),
                                                           max_retries=0, **settings))
            except BaseException as e:
                box["error"] = e

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.time() + 120
        while not list(pid_dir.glob("relu-hangs-tiny.*")) and time.time() < deadline:
            time.sleep(0.02)
        os.kill(int(next(pid_dir.glob("relu-hangs-tiny.*")).name.rsplit(".", 1)[1]), signal.SIGKILL)
        thread.join(timeout=300)
        err = box.get("error")
        assert isinstance(err, WorkerLostError), err
        assert "mutant relu-hangs-tiny" in str(err) and "worker died on all 1 tries" in str(err)
        resumed = run_killmatrix(mutants, KillMatrixSettings(out=str(tmp_path / "km"), **settings))
        assert resumed.computed_cells == 8 and resumed.reused_cells == 8


class TestRayPool:
    def test_task_error_names_task_and_worker(self, cluster):
        """A task whose own code raises is not retried; the error names the task, its worker and the cause."""
        with RayPool(progress=False) as pool:
            with pytest.raises(TaskFailedError, match=r"task mutant m1 on input i1 failed on worker pid \d+ "
                                                      r"on .*ZeroDivisionError"):
                list(pool.map_unordered(_divide, [1, 0], labels=["mutant m0 on input i0",
                                                                  "mutant m1 on input i1"]))

    def test_results_unordered_with_indices(self, cluster):
        """Every payload's result comes back once, with its index."""
        with RayPool(progress=False) as pool:
            assert sorted(pool.map_unordered(_divide, [1, 2, 4])) == [(0, 1.0), (1, 0.5), (2, 0.25)]


def _divide(x):
    return 1 / x


class TestScheduleReuse:
    def test_copied_cells_equal_computed_ones(self, monkeypatch):
        """In one task, a descending cell whose outputs are bitwise the ascending ones is copied; it
        equals the cell a descending-only task computes. A missing barrier (outputs differ) and a
        dropped weight (outputs the same) cover both paths. Built without the race detector, which
        would end the missing barrier as a data_race under both orders (no outputs to compare)."""
        import mutagym.mutants.killmatrix as km

        monkeypatch.setenv("MUTAGYM_RACE_CHECK", "0")
        import mutagym.rewards.judging as judging

        seen = []
        real = judging.identical
        monkeypatch.setattr(judging, "identical", lambda a, b: seen.append(real(a, b)) or seen[-1])
        settings = KillMatrixSettings(generators=("sign_mixed", "affine_perturbed"), presets=("tiny", "remainder"),
                                      preset_generators=None)
        bundle = km._gate(load_problem("layernorm"), settings)[1]
        every = tuple(range(len(bundle["ids"])))
        no_barrier = MutantRecord("layernorm-no-barrier", "layernorm", "synchronization", "hand-barrier",
                                  substrate_with("layernorm", "        __syncthreads();\n    }\n    const float mean",
                                       "    }\n    const float mean"))
        for m in (hand_mutants()[3], no_barrier):
            def task(schedules):
                return km._Task(m.id, m.source, m.problem, tuple((s, every) for s in schedules), "cpu", 10.0, None)
            both = km.run_task(task(("ascending", "descending")), {m.problem: bundle})["rows"]
            alone = km.run_task(task(("descending",)), {m.problem: bundle})["rows"]
            assert [r for r in both if r["schedule"] == "descending"] == alone, m.id
        assert True in seen and False in seen


class TestRecords:
    def test_as_records_accepts_dicts_and_rejects_incomplete(self):
        """Dict records need id (or mutant_id), problem and source; duplicates are refused."""
        [r] = as_records([{"mutant_id": "m", "problem": "relu", "family": "f", "rule": "r", "source": "s"}])
        assert r.id == "m" and r.line == -1
        with pytest.raises(ValueError, match="lacks source"):
            as_records([{"id": "m", "problem": "relu"}])
        with pytest.raises(ValueError, match="duplicate mutant ids: \\['m'\\]"):
            as_records([r, r])


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestAttach:
    def test_cli_attaches_to_a_started_cluster(self, tmp_path):
        """`ray start --head --num-cpus 1` in a subprocess; `mutagym killmatrix --address` runs on it."""
        port = _free_port()
        ray_bin = Path(sys.executable).with_name("ray")
        # --block keeps the head in the foreground: we stop exactly this cluster by its process id
        # (a bare `ray stop` would also stop other Ray clusters on a shared machine).
        head = subprocess.Popen([str(ray_bin), "start", "--head", "--block", "--num-cpus", "1",
                                 "--port", str(port), "--include-dashboard=false"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            pool = tmp_path / "pool.parquet"
            pq.write_table(pa.Table.from_pylist([
                {"id": m.id, "problem": m.problem, "family": m.family, "rule": m.rule, "source": m.source}
                for m in hand_mutants()[:2]]), pool)
            env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
            cmd = [sys.executable, "-m", "mutagym", "killmatrix", "--pool", str(pool), "--problems", "relu",
                   "--address", f"127.0.0.1:{port}", "--generators", "uniform01,sign_mixed",
                   "--presets", "tiny", "--schedules", "ascending", "--out", str(tmp_path / "km"),
                   "--no-progress"]
            deadline = time.time() + 90
            while b"Ray runtime started" not in (line := head.stdout.readline()):
                assert line and time.time() < deadline, "ray start --head did not come up"
            t0 = time.time()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
            print(f"CLI on the attached cluster: {time.time() - t0:.1f} s")
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            assert "survived everything" in proc.stdout and "relu" in proc.stdout
            outcomes = pq.read_table(tmp_path / "km" / "outcomes.parquet")
            assert outcomes.num_rows == 2 * 2 * 1
        finally:
            os.killpg(head.pid, signal.SIGTERM)
            try:
                head.wait(timeout=20)
            except subprocess.TimeoutExpired:  # its graceful stop can hang on a busy machine
                os.killpg(head.pid, signal.SIGKILL)
                head.wait(timeout=30)
            current = Path("/tmp/ray/ray_current_cluster")   # what `ray start` left for ray.init()
            if current.is_file() and current.read_text().strip().endswith(f":{port}"):
                current.unlink()


class TestCli:
    def test_local_cluster_builds_the_pool_and_prints_the_summary(self, tmp_path):
        """`mutagym killmatrix --problems relu --num-cpus 2`: gated pool under --out, tables, summary."""
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        out = tmp_path / "km"
        proc = subprocess.run([sys.executable, "-m", "mutagym", "killmatrix", "--problems", "relu",
                               "--num-cpus", "2", "--generators", "sign_mixed", "--presets", "tiny",
                               "--schedules", "ascending", "--out", str(out), "--no-progress"],
                              capture_output=True, text=True, env=env, timeout=400)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "kill matrix settings" in proc.stdout and "survived everything" in proc.stdout
        mutants = pq.read_table(out / "mutants.parquet")
        assert mutants.num_rows > 10 and set(mutants.column("problem").to_pylist()) == {"relu"}
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["rows"]["outcomes.parquet"] == mutants.num_rows   # 1 input x 1 schedule
