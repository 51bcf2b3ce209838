"""What the emulator's race, state and poison checks kill: the synchronisation rules' mutants and the
rules issue 15 added, through the kill matrix with the checks off and on, in one run.

    python benchmarks/bench_race_rules.py                     # about five minutes on 2 cores

The mutants of those rules over the whole catalog pass the compile gate (not the quarantine, which
drops every mutant that faults on the official inputs, a data race included: here they are counted
as what they are, mutants the checks kill), then the kill matrix (every
generator and preset, seed 0, both schedules) runs them twice, each time in a child process with a
fresh compile cache: `MUTAGYM_RACE_CHECK=0` and the default (on). Output poison is drawn per case
in both runs (it is not switchable), so the difference is the race, state and spin checks. Per
rule: mutants, those some valid input kills (witnessed), those the committed hardened checker's
suite kills, each off and on.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mutagym.mutants.generate import generate_pool
from mutagym.mutants.killmatrix import MutantRecord
from mutagym.mutants.compile_gate import gate_one
from mutagym.mutants.rule_schema import load_rules
from mutagym.rewards.checker import load_checker
from mutagym.rewards.scoring import killed_by, load_killmatrix

#: The rules whose faults the checks target: the synchronisation family and issue 15's additions.
ISSUE_15_RULES = ("arith-accumulator-init-dropped", "arith-output-init-dropped", "sync-warp-phase-barrier-to-fence",
                  "sync-atomic-sub-bitwise-to-plain-rmw", "sync-atomic-max-min-to-plain-rmw",
                  "sync-atomic-exch-to-plain-store", "sync-atomic-add-result-to-plain-rmw")
COMMITTED_CHECKER = Path(__file__).resolve().parents[1] / "configs" / "checkers"

CHILD = r"""
import pickle, sys
from mutagym.mutants.killmatrix import KillMatrixSettings, run_killmatrix
records = pickle.loads(open(sys.argv[1], "rb").read())
run_killmatrix(records, KillMatrixSettings(out=sys.argv[2], num_cpus=2, progress=False))
"""


def compilable_mutants(rules: set[str]) -> list[MutantRecord]:
    pool = generate_pool(rules=[r for r in load_rules() if r.id in rules])
    with ProcessPoolExecutor(max_workers=2) as ex:
        verdicts = list(ex.map(gate_one, pool.mutants))
    return [MutantRecord(m.id, m.problem, m.family, m.rule, m.source, m.line)
            for m, v in zip(pool.mutants, verdicts) if v.status == "compilable"]


def kill_matrix(records: list[MutantRecord], out: Path, race: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="mg-race-rules-") as cache:
        blob = Path(cache) / "records.pickle"
        blob.write_bytes(pickle.dumps(records))
        env = {**os.environ, "MUTAGYM_RACE_CHECK": "1" if race else "0", "MUTAGYM_CACHE": cache}
        env.pop("RAY_ADDRESS", None)
        proc = subprocess.run([sys.executable, "-c", CHILD, str(blob), str(out)], env=env,
                              capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the kill matrix with the checks {'on' if race else 'off'} failed:\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="keep the two kill matrices here (default: a temporary folder)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    console = Console(width=170)
    rules = {r.id for r in load_rules() if r.family == "synchronization"} | set(ISSUE_15_RULES)
    records = compilable_mutants(rules)
    rule_of = {m.id: m.rule for m in records}
    checker = load_checker(next(COMMITTED_CHECKER.glob("hardened-*.json")))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.out or tmp)
        found = {}
        for race in (False, True):
            console.print(f"kill matrix of {len(records)} mutants, checks {'on' if race else 'off'} ...")
            kill_matrix(records, root / ("on" if race else "off"), race)
            km = load_killmatrix(root / ("on" if race else "off"))
            found[race] = (set(km.witnessed()), killed_by(checker, km), km)
    rows = []
    for rule in sorted(set(rule_of.values())):
        ids = {m for m, r in rule_of.items() if r == rule}
        rows.append({"rule": rule, "new": rule in ISSUE_15_RULES, "mutants": len(ids),
                     "witnessed off": len(ids & found[False][0]), "witnessed on": len(ids & found[True][0]),
                     "hardened off": len(ids & found[False][1]), "hardened on": len(ids & found[True][1])})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    table = Table(title=f"synchronisation and issue-15 rules, checks off vs on (committed checker {checker.name})")
    for col in ("rule", "mutants", "witnessed off", "witnessed on", "hardened off", "hardened on"):
        table.add_column(col, justify="left" if col == "rule" else "right")
    for r in rows:
        table.add_row(r["rule"] + (" (new)" if r["new"] else ""), str(r["mutants"]), str(r["witnessed off"]),
                      str(r["witnessed on"]), str(r["hardened off"]), str(r["hardened on"]))
    total = {k: sum(r[k] for r in rows) for k in ("mutants", "witnessed off", "witnessed on", "hardened off", "hardened on")}
    table.add_row("all", *(str(total[k]) for k in ("mutants", "witnessed off", "witnessed on", "hardened off",
                                                     "hardened on")))
    console.print(table)


if __name__ == "__main__":
    main()
