"""Sites, compilable and witnessed counts of one rule file's rules: the check a new wave of rules
must pass (each rule fires somewhere in the catalog, compiles there, and some valid input kills it).

    python benchmarks/bench_new_rules.py --rules-file rules/idiom.yml
    python benchmarks/bench_new_rules.py --rules-file rules/idiom.yml --problems softmax,argmax_dim

The rules of `--rules-file` run over the substrates of `--problems` (default: the whole catalog;
a problem folder that does not load is skipped and named); every site is a mutant. `duplicates`
counts a rule's mutants whose source some rule of another file also produces (a new rule should
have none). Each mutant passes the compile gate (NVRTC, then the CPU build); up to
`--max-per-rule` compilable mutants of each rule (one per problem first) go through a small kill
matrix (the kill matrix's generators unless `--generators` names others, seed 0, both schedules,
on the presets of `--presets` only, no shape classes unless `--shape-classes` names some), so
`witnessed` is a lower bound of what the full matrix finds, out of `tried`. A rule with no site in those problems is listed with zeros. Results
for the idiom family are in benchmarks/README.md ("Third-wave rules: idiom family").
"""

from __future__ import annotations

import argparse
import json
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mutagym.mutants.compile_gate import gate_one
from mutagym.mutants.generate import generate_pool
from mutagym.mutants.killmatrix import KillMatrixSettings, as_records, run_killmatrix
from mutagym.mutants.rule_schema import load_rule_file, load_rules
from mutagym.rewards.generators import GENERATORS
from mutagym.substrates.catalog import list_problems

DEFAULT_PRESETS = ("official", "remainder", "tiny")


def _names(text: str | None, known: list[str], what: str) -> list[str] | None:
    """A comma-separated list checked against *known*; None stays None (all)."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"--{what}: unknown name(s) {', '.join(map(repr, unknown))}")
    return names


def sample(mutants: list, per_rule: int) -> list:
    """Up to *per_rule* of each rule's mutants (0: all): each problem's first site before any second one."""
    if per_rule <= 0:
        return list(mutants)
    by_rule: dict[str, list] = {}
    for m in mutants:
        by_rule.setdefault(m.rule, []).append(m)
    picked = []
    for ms in by_rule.values():
        seen: set[str] = set()
        first, later = [], []
        for m in ms:
            (later if m.problem in seen else first).append(m)
            seen.add(m.problem)
        picked += (first + later)[:per_rule]
    return picked


def measure(rules_file: Path, problems: list[str] | None, presets: tuple[str, ...],
            shape_classes: tuple[str, ...], generators: tuple[str, ...] | None, out: Path, workers: int,
            per_rule: int) -> tuple[list[dict], dict]:
    """One row per rule of *rules_file* (sites, duplicates, compilable, tried, witnessed), and the
    problems that were skipped because their folder does not load."""
    rules = load_rule_file(rules_file)
    ids = {r.id for r in rules}
    pool = generate_pool(problems, rules, skip_broken=True)
    others = generate_pool(problems, [r for r in load_rules() if r.id not in ids], skip_broken=True)
    elsewhere = {(m.problem, m.source) for m in others.mutants}
    with ProcessPoolExecutor(max_workers=workers) as ex:
        verdicts = list(ex.map(gate_one, pool.mutants))
    compilable = [m for m, v in zip(pool.mutants, verdicts) if v.status == "compilable"]
    tried = sample(compilable, per_rule)
    witnessed: set[str] = set()
    if tried:
        settings = KillMatrixSettings(out=str(out), num_cpus=workers, progress=False, presets=presets,
                                      shape_classes=shape_classes, generators=generators)
        result = run_killmatrix(as_records(tried), settings)
        witnessed = {mid for mid, w in result.witnesses().items() if w}
    rows = []
    for rule in rules:
        mine = [m for m in pool.mutants if m.rule == rule.id]
        ran = [m for m in tried if m.rule == rule.id]
        rows.append({
            "rule": rule.id,
            "sites": len(mine),
            "problems": sorted({m.problem for m in mine}),
            "duplicates": sum((m.problem, m.source) in elsewhere for m in mine),
            "compilable": sum(m.rule == rule.id for m in compilable),
            "tried": len(ran),
            "witnessed": sum(m.id in witnessed for m in ran),
            "witnessed_problems": sorted({m.problem for m in ran if m.id in witnessed}),
        })
    return rows, pool.skipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules-file", required=True, type=Path, help="a rules/<family>.yml file")
    parser.add_argument("--problems", default=None, help="comma-separated problem ids (default: all)")
    parser.add_argument("--presets", default=",".join(DEFAULT_PRESETS), help="shape presets of the kill matrix")
    parser.add_argument("--shape-classes", default="", help="shape classes of the kill matrix (default: none)")
    parser.add_argument("--generators", default=None,
                        help="input generators of the kill matrix (default: every one of rewards.generators.GENERATORS)")
    parser.add_argument("--max-per-rule", type=int, default=4, help="compilable mutants per rule in the kill matrix (0: all)")
    parser.add_argument("--workers", type=int, default=2, help="compile-gate processes and Ray CPUs")
    parser.add_argument("--out", default=None, type=Path, help="keep the kill matrix here (default: a temporary folder)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args()
    if not args.rules_file.is_file():
        raise SystemExit(f"--rules-file: {args.rules_file} is not a file")
    problems = _names(args.problems, list_problems(), "problems")
    presets = tuple(p.strip() for p in args.presets.split(",") if p.strip())
    classes = tuple(c.strip() for c in args.shape_classes.split(",") if c.strip())
    generators = _names(args.generators, list(GENERATORS), "generators")
    with tempfile.TemporaryDirectory(prefix="mg-new-rules-") as tmp:
        rows, skipped = measure(args.rules_file, problems, presets, classes,
                                tuple(generators) if generators else None, args.out or Path(tmp),
                                args.workers, args.max_per_rule)
    if args.json:
        print(json.dumps({"rules": rows, "skipped_problems": skipped}, indent=1))
        return
    console = Console(width=170)
    for problem, why in skipped.items():
        console.print(f"skipped {problem}: {why}")
    table = Table(title=f"{args.rules_file}: sites, compilable, witnessed (presets {', '.join(presets)}, "
                        f"up to {args.max_per_rule or 'all'} mutants per rule in the kill matrix)")
    cols = ("rule", "sites", "duplicates", "compilable", "tried", "witnessed", "witnessed on")
    for col in cols:
        table.add_column(col, justify="left" if col in ("rule", "witnessed on") else "right")
    for r in rows:
        table.add_row(r["rule"], *(str(r[k]) for k in cols[1:-1]), ", ".join(r["witnessed_problems"]))
    table.add_row("total", *(str(sum(r[k] for r in rows)) for k in cols[1:-1]),
                  f"{sum(r['witnessed'] > 0 for r in rows)} of {len(rows)} rules witnessed")
    console.print(table)


if __name__ == "__main__":
    main()
