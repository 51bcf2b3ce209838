"""Which value families the costly fixed presets can do without: no mutant may lose its last witness.

    python -m mutagym mutate --out /tmp/pool                                   # the pool (once)
    python benchmarks/bench_preset_cut.py --pool /tmp/pool/mutants.parquet --field benchmarks/probe \\
        --out /tmp/presetcut

The kill matrix draws the fixed presets `official`, `remainder` and `large_reduction` with value
families (`KillMatrixSettings.preset_generators`), and those inputs are most of its cost (emulated
elements x mutants). A family of a preset can go when every mutant some input witnesses keeps a
witness among the inputs left. Measuring that needs each mutant's witnesses, but only of the
mutants nothing else witnesses, so the baseline is built in two phases in one kill-matrix folder:

1. every mutant (and field fault) on the inputs no cut touches: the `tiny` preset, the cheap shape
   classes, the field faults' witnesses;
2. the mutants phase 1 left unwitnessed, on every input the pool of record draws
   (`envs.pool.POOL_PRESET_GENERATORS`: every family but on `large_reduction`, the candidates a cut
   thins; the cells of phase 1 are reused).

Then families are dropped greedily, the costliest (preset, family) first, while every mutant
phase 2 witnesses keeps a witness. A field fault's witness of a family phase 2 does not draw
(`normal:large_reduction`, `ties:official`) is no family to cut: the matrix adds it whatever the settings. The table shows each preset's families kept and dropped and
the volume; the last line is the `preset_generators` that the cut leaves (the kill matrix's
default, `killmatrix.PRESET_GENERATORS`, is the cut of 2026-12-02).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from mutagym.envs.pool import POOL_PRESET_GENERATORS
from mutagym.mutants.field import load_field_faults
from mutagym.mutants.killmatrix import (PRESET_GENERATORS, KillMatrixSettings, load_mutants, preset_draws,
                                        run_killmatrix)
from mutagym.rewards.generators import GENERATORS
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.shapes import COSTLY_CLASSES, SHAPE_CLASSES, cost
from mutagym.substrates.catalog import list_problems, load_problem

#: The presets a cut may thin; `tiny` costs nothing and stays whole.
CUTTABLE = ("official", "remainder", "large_reduction")


def cuttable(preset: str, family: str) -> bool:
    """Whether phase 2 draws *family* at *preset* (so that a cut can leave it out)."""
    return preset in CUTTABLE and preset_draws(POOL_PRESET_GENERATORS, preset, family)


def build_baseline(pool: str, out: Path, field_sets: list[str], num_cpus: int | None) -> None:
    """The two phases of the module docstring, in `out` (resumable: a kill matrix resumes)."""
    problems = list_problems()
    faults = load_field_faults(field_sets, problems) if field_sets else None
    mutants = load_mutants(problems, pool) + (faults.records if faults else [])
    witnesses = faults.witnesses if faults else None
    cheap = tuple(c for c in SHAPE_CLASSES if c not in COSTLY_CLASSES)
    first = run_killmatrix(mutants, KillMatrixSettings(out=str(out), presets=("tiny",), shape_classes=cheap,
                                                       num_cpus=num_cpus), witnesses)
    table = first.mutants.to_pydict()
    done = {m for m, w in zip(table["mutant_id"], table["witnessed"]) if w}
    rest = [m for m in mutants if m.id not in done]
    run_killmatrix(rest, KillMatrixSettings(out=str(out), preset_generators=dict(POOL_PRESET_GENERATORS),
                                            num_cpus=num_cpus), witnesses)
    (out / "baseline.json").write_text(json.dumps({"mutants": len(mutants), "phase1_witnessed": len(done),
                                                   "phase2": len(rest)}))


def pair_volumes(out: Path, pool: str) -> dict[tuple[str, str], int]:
    """(preset, family) of the cuttable presets -> emulated elements x compilable mutants of the
    problem, summed over the pair's valid inputs (the first schedule: the large ones run no other)."""
    status = pq.read_table(pool, columns=["problem", "status"]).to_pydict()
    mutants = Counter(p for p, s in zip(status["problem"], status["status"]) if s == "compilable")
    inputs = pq.read_table(out / "inputs.parquet").to_pylist()
    volume: Counter = Counter()
    for r in inputs:
        if r["valid"] and cuttable(r["preset"], r["generator"]):
            dims = generate_from_id(r["id"]).dims
            volume[(r["preset"], r["generator"])] += cost(load_problem(r["problem"]), dims).elements * mutants[r["problem"]]
    return dict(volume)


def needed_pairs(out: Path) -> list[set[tuple[str, str]]]:
    """For each mutant phase 2 witnesses: the (preset, family) pairs of its witnesses."""
    inputs = {r["id"]: r for r in pq.read_table(out / "inputs.parquet").to_pylist()}
    table = pq.read_table(out / "mutants.parquet", columns=["witnessed", "witnesses"]).to_pydict()
    needs = []
    for witnessed, ids in zip(table["witnessed"], table["witnesses"]):
        if witnessed:
            pairs = {(inputs[i]["preset"], inputs[i]["generator"]) for i in ids}
            if all(cuttable(*p) for p in pairs):   # else an uncut input witnesses it already
                needs.append(pairs)
    return needs


def greedy_cut(volume: dict, needs: list[set]) -> set[tuple[str, str]]:
    """The pairs kept: from all, drop the costliest first while every need keeps one."""
    keep = set(volume)
    for pair in sorted(volume, key=lambda p: (-volume[p], p)):
        if all(need & (keep - {pair}) for need in needs):
            keep.discard(pair)
    return keep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", required=True, help="a mutant pool Parquet file (mutagym mutate)")
    parser.add_argument("--out", required=True, type=Path, help="the baseline's kill-matrix folder (resumed)")
    parser.add_argument("--field", action="append", default=[], help="a field-fault set (repeatable)")
    parser.add_argument("--num-cpus", type=int, default=None)
    args = parser.parse_args()
    console = Console(width=150)
    if not (args.out / "baseline.json").is_file():
        build_baseline(args.pool, args.out, args.field, args.num_cpus)
    counts = json.loads((args.out / "baseline.json").read_text())
    volume, needs = pair_volumes(args.out, args.pool), needed_pairs(args.out)
    keep = greedy_cut(volume, needs)
    total = sum(volume.values())
    table = Table(title=f"{counts['mutants']} mutants: {counts['phase1_witnessed']} witnessed by uncut inputs, "
                        f"{len(needs)} only by the cuttable presets' inputs; shares of the cuttable presets' volume")
    for col in ("preset", "families kept", "dropped", "share before", "share after"):
        table.add_column(col, justify="right" if col.startswith("share") else "left")
    for preset in CUTTABLE:
        pairs = [p for p in volume if p[0] == preset]
        kept = sorted(g for _, g in pairs if (preset, g) in keep)
        table.add_row(preset, ", ".join(kept), ", ".join(sorted(g for _, g in pairs if (preset, g) not in keep)),
                      f"{sum(volume[p] for p in pairs) / total:.1%}",
                      f"{sum(volume[p] for p in pairs if p in keep) / total:.1%}")
    console.print(table)
    left = {preset: tuple(g for g in GENERATORS if (preset, g) in keep) for preset in CUTTABLE}
    console.print(f"volume of the cuttable presets kept: {sum(volume[p] for p in keep) / total:.1%}")
    console.print(f"preset_generators = {left!r}  (today's: {PRESET_GENERATORS!r})")


if __name__ == "__main__":
    main()
