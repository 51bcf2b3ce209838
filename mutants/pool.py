"""Build the mutant pool: generate, compile gate, quarantine, one Parquet table; parallel and resumable.

Every mutant ends with one status:

| status | meaning |
| --- | --- |
| `compilable` | NVRTC and the CPU emulator both build it, and it runs cleanly on the official inputs: it enters the kill matrix |
| `uncompilable` | a compiler rejected it (`stage` says which: `nvrtc` or `cpu`) |
| `quarantined` | it builds, but crashes, faults, hangs, raises a sync error or cannot be launched (a grid of zero blocks) on the official inputs (`stage` is `quarantine`): it can never reach a reward |

The official inputs are KernelBench's: `uniform01` at the official shape, seed 0, ascending thread
order. The pool is written to `mutants.parquet` after every `SAVE_EVERY` verdicts, so an
interrupted build resumes where it stopped and never judges a mutant twice (a mutant's id fixes
its source, so an old verdict stays valid).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from .compile_gate import GateResult, gate_one
from .generate import Mutant, MutantPool, generate_pool
from .pool_table import mutants_from_table, read_pool, write_pool

POOL_FILE = "mutants.parquet"
SAVE_EVERY = 200
#: A correct official run takes well under a second; a mutant still running after this hangs.
QUARANTINE_TIMEOUT_S = 5.0


def quarantine_reason(mutant: Mutant, timeout_s: float = QUARANTINE_TIMEOUT_S) -> str:
    """Why *mutant* must be quarantined ("" if it runs cleanly on the official inputs)."""
    from ..rewards.generators import generate
    from ..runtime import LaunchError, compile as build
    from ..substrates.catalog import load_problem

    problem = load_problem(mutant.problem)
    official = generate(problem, "uniform01", preset="official", seed=0)
    try:
        result = build(mutant.source, backend="cpu").run(
            official.inputs, problem.output_specs(official.dims), official.dims, problem.scalar_values(),
            timeout_s=timeout_s)
    except LaunchError as err:    # e.g. a grid that floor division shrank to zero blocks
        return f"launch_error on the official inputs: {err}"
    return "" if result.ok else f"{result.outcome} on the official inputs: {result.message}"


def judge(mutant: Mutant) -> GateResult:
    """Compile gate, then quarantine: the mutant's final status."""
    verdict = gate_one(mutant)
    if verdict.status != "compilable":
        return verdict
    reason = quarantine_reason(mutant)
    return GateResult(mutant.id, "quarantined", "quarantine", reason) if reason else verdict


@dataclass
class PoolBuild:
    """The result of `build_pool`: the mutants, their verdicts, and how many were judged now."""

    pool: MutantPool
    verdicts: dict[str, GateResult]
    judged_now: int
    path: Path

    def counts(self) -> dict[tuple[str, str], int]:
        """(family, status) -> number of mutants."""
        out: dict[tuple[str, str], int] = {}
        for m in self.pool.mutants:
            key = (m.family, self.verdicts[m.id].status)
            out[key] = out.get(key, 0) + 1
        return out


def _previous(path: Path) -> tuple[list[Mutant], dict[str, GateResult]]:
    """The mutants and verdicts an earlier (possibly interrupted) build saved."""
    if not path.exists():
        return [], {}
    table = read_pool(path)
    verdicts = {row["id"]: GateResult(row["id"], row["status"], row["stage"], row["error"] or "")
                for row in table.select(["id", "status", "stage", "error"]).to_pylist()}
    return mutants_from_table(table), verdicts


def _save(path: Path, mutants: list[Mutant], verdicts: dict[str, GateResult]) -> None:
    """Write every judged mutant, in pool order (this run's problems and any earlier ones)."""
    judged = sorted((m for m in mutants if m.id in verdicts), key=lambda m: (m.problem, m.id))
    write_pool(judged, path, [verdicts[m.id] for m in judged])


def build_pool(out_dir: str | Path, problems: Iterable[str] | None = None, *, workers: int = 2,
               progress: bool = True) -> PoolBuild:
    """Generate the pool for *problems* (default: all) and judge every mutant not judged before."""
    path = Path(out_dir) / POOL_FILE
    pool = generate_pool(problems)
    earlier, verdicts = _previous(path)
    ids = {m.id for m in pool.mutants}
    everything = pool.mutants + [m for m in earlier if m.id not in ids]
    todo = [m for m in pool.mutants if m.id not in verdicts]
    done_now = 0
    bar = None
    if progress and todo:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)
        bar = Progress(TextColumn("compile gate + quarantine"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("{task.fields[rate]}"), TimeRemainingColumn())
        task = bar.add_task("gate", total=len(todo), rate="")
        bar.start()
    try:
        with ProcessPoolExecutor(max_workers=max(1, workers),
                                 mp_context=multiprocessing.get_context("spawn")) as ex:
            futures = {ex.submit(judge, m): m for m in todo}
            for future in as_completed(futures):
                verdicts[futures[future].id] = future.result()
                done_now += 1
                if bar is not None:
                    elapsed = bar.tasks[0].elapsed or 1e-9
                    bar.update(task, advance=1, rate=f"{done_now / elapsed:.1f} mutants/s")
                if done_now % SAVE_EVERY == 0:
                    _save(path, everything, verdicts)
    finally:
        if bar is not None:
            bar.stop()
        _save(path, everything, verdicts)
    return PoolBuild(pool, verdicts, done_now, path)
