"""Probe of our own (issue 17 item 4): hand-written kernels judged by the reward gate and by each
checker preset; results in benchmarks/README.md, "Probe of our own (issue 17 item 4)".

The kill matrix measures checkers against single-site mutants of our own substrates; policies
write other faults (a vector tail for some residues only, a capped grid, an online softmax without
rescaling, an accumulator at 0 instead of -inf, ...). `benchmarks/probe/` holds kernels written
apart from the substrates, half wrong with a witness input and half correct with other numerics
(`probe.toml`). Each kernel is judged as the environment judges it (`envs.judge.Judge`, in this
process: the reward gate by default, or one checker alone), and the table counts per judge the
false accepts (a wrong kernel paid) and false rejects (a correct kernel refused). The gate's
fresh stage is a draw: kernels whose verdict a fresh draw decides are judged again with other
secrets (`--redraws`), which gives a rejection rate.

    python benchmarks/bench_probe.py                      # every kernel, the gate and every checker
    python benchmarks/bench_probe.py --only softmax --checkers kernelbench
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mutagym.rewards.field_faults import FIELD_MANIFEST, FieldKernel, load_field_set

PROBE_DIR = Path(__file__).resolve().parent / "probe"
MANIFEST = PROBE_DIR / FIELD_MANIFEST
#: The secret of the gate's fresh draws: fixed, so a rerun draws the same fresh cases.
SECRET = 20261201
GATE = "gate"


def load_manifest(path: Path = MANIFEST) -> list[FieldKernel]:
    """The kernels of the probe (a field-fault set, `rewards.field_faults`) whose manifest is
    `path`; a malformed entry raises ValueError naming its index, file and key."""
    if path.name != FIELD_MANIFEST:
        raise ValueError(f"a probe manifest is named {FIELD_MANIFEST}, got {str(path)!r}")
    return load_field_set(path.parent)


def run_cases(kernel: FieldKernel, schedules: tuple[str, ...] = ("ascending",)) -> dict[str, list]:
    """`kernel.cases` run in one batch on the emulator against the fp64 reference at the problem's
    tolerance (as `mutagym run` judges one input), under each of `schedules`: a `CaseJudgement`
    per case, by schedule."""
    from mutagym.rewards.moves import generate_from_id
    from mutagym.rewards.judging import comparator_for, judge_kernel
    from mutagym.runtime import compile
    from mutagym.substrates.catalog import load_problem
    problem = load_problem(kernel.problem)
    built = compile(kernel.source, backend="cpu")
    inputs = [generate_from_id(i) for i in kernel.cases]
    return judge_kernel(built, problem, inputs, comparator_for(problem), schedules)


def judge_probe(kernels: list[FieldKernel], checkers: list[str], secret: int = SECRET,
                on_done=lambda record: None) -> list[dict]:
    """Each kernel's verdict by the reward gate (`GATE`) and by each checker alone: a record per
    kernel with, per judge, accepted, outcome, and the gate's failing stage and order (`on_done`
    gets each record as it is made)."""
    from mutagym.envs.judge import Judge
    judges = {GATE: Judge(None, prescreen=False, secret=secret),
              **{name: Judge(name, prescreen=False) for name in checkers}}
    records = []
    try:
        for kernel in kernels:
            source = kernel.source
            record = {"file": kernel.file, "problem": kernel.problem, "expected": kernel.expected,
                      "kind": kernel.kind or "-", "verdicts": {}}
            for name, judge in judges.items():
                started = time.perf_counter()
                j = judge.judge(source, kernel.problem)
                gate = j.gate or {}
                record["verdicts"][name] = {"accepted": j.accepted, "outcome": j.outcome,
                                            "infra_error": j.infra_error, "stage": gate.get("stage"),
                                            "schedule": gate.get("schedule"),
                                            "failing": gate.get("failing"),
                                            "seconds": round(time.perf_counter() - started, 2)}
            records.append(record)
            on_done(record)
    finally:
        for judge in judges.values():
            judge.close()
    return records


def redraw_gate(kernels: list[FieldKernel], secrets: range) -> dict[str, list[dict]]:
    """The gate's verdict on each of `kernels` under each secret of `secrets`: the fresh stage
    draws other cases for each, so a verdict that came from a fresh draw (or an acceptance a fresh
    draw could overturn) is measured as a rate."""
    from mutagym.envs.judge import Judge
    out: dict[str, list[dict]] = {k.file: [] for k in kernels}
    for secret in secrets:
        judge = Judge(None, prescreen=False, secret=secret)
        try:
            for kernel in kernels:
                j = judge.judge(kernel.source, kernel.problem)
                out[kernel.file].append({"secret": secret, "accepted": j.accepted, "outcome": j.outcome,
                                         "stage": (j.gate or {}).get("stage"),
                                         "failing": (j.gate or {}).get("failing")})
        finally:
            judge.close()
    return out


def summarise(records: list[dict], judges: list[str]) -> list[dict]:
    """Per judge: false accepts (wrong kernels accepted), false rejects (correct kernels refused)
    and infrastructure errors, over the probe's wrong and correct kernels."""
    wrong = [r for r in records if r["expected"] == "wrong"]
    right = [r for r in records if r["expected"] == "correct"]
    return [{"judge": name,
             "false_accepts": sum(r["verdicts"][name]["accepted"] for r in wrong), "wrong": len(wrong),
             "false_rejects": sum(not r["verdicts"][name]["accepted"] for r in right), "correct": len(right),
             "infra_errors": sum(r["verdicts"][name]["infra_error"] for r in records)}
            for name in judges]


def _cell(verdict: dict, expected: str) -> str:
    ok = verdict["accepted"] == (expected == "correct")
    word = "accept" if verdict["accepted"] else "reject"
    where = f" ({verdict['stage']}/{verdict['schedule']})" if verdict.get("stage") else ""
    text = f"{word}{where}" if verdict["accepted"] else f"{word}: {verdict['outcome']}{where}"
    return f"[green]{text}[/green]" if ok else f"[bold red]{text}[/bold red]"


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from mutagym.rewards.checker import list_checkers
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated problems or file stems to judge (default: all)")
    parser.add_argument("--checkers", help="comma-separated checkers judged alone (default: every shipped one)")
    parser.add_argument("--secret", type=int, default=SECRET, help="seed of the gate's fresh draws")
    parser.add_argument("--redraws", type=int, default=10,
                        help="secrets the gate is rerun with on kernels whose verdict a fresh draw decides or could "
                             "overturn (the gate accepted a wrong kernel, or rejected one at the fresh stage); 0: none")
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args()
    kernels = load_manifest()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {k.problem for k in kernels} - {Path(k.file).stem for k in kernels}
        if unknown:
            parser.error(f"--only {args.only!r}: no probe kernel or problem named {', '.join(sorted(unknown))}")
        kernels = [k for k in kernels if k.problem in wanted or Path(k.file).stem in wanted]
    checkers = args.checkers.split(",") if args.checkers else list_checkers()
    console = Console()
    settings = Table(title="bench_probe settings")
    for col in ("kernels", "wrong", "correct", "problems", "gate secret", "checkers alone"):
        settings.add_column(col)
    settings.add_row(str(len(kernels)), str(sum(k.expected == "wrong" for k in kernels)),
                     str(sum(k.expected == "correct" for k in kernels)), str(len({k.problem for k in kernels})),
                     str(args.secret), ", ".join(checkers))
    console.print(settings)
    started = time.perf_counter()
    with Progress(console=console) as progress:
        task = progress.add_task("judging the probe", total=len(kernels))
        records = judge_probe(kernels, checkers, args.secret,
                              on_done=lambda r: progress.update(task, advance=1, description=r["file"]))
    judges = [GATE, *checkers]
    table = Table(title="probe verdicts (red: a false accept or a false reject)")
    for col in ("kernel", "problem", "expected", "fault kind", *judges):
        table.add_column(col, overflow="fold")
    for r in records:
        table.add_row(r["file"].removesuffix(".cu"), r["problem"], r["expected"], r["kind"],
                      *(_cell(r["verdicts"][name], r["expected"]) for name in judges))
    console.print(table)
    summary = summarise(records, judges)
    totals = Table(title=f"false accepts and rejects per judge ({time.perf_counter() - started:.0f} s)")
    for col in ("judge", "false accepts (wrong paid)", "false rejects (correct refused)", "infra errors"):
        totals.add_column(col)
    for s in summary:
        totals.add_row(s["judge"], f"{s['false_accepts']}/{s['wrong']}", f"{s['false_rejects']}/{s['correct']}",
                       str(s["infra_errors"]))
    console.print(totals)
    by_file = {k.file: k for k in kernels}
    chancy = [by_file[r["file"]] for r in records
              if r["verdicts"][GATE]["stage"] == "fresh" or (r["expected"] == "wrong" and r["verdicts"][GATE]["accepted"])]
    redraws = {}
    if chancy and args.redraws > 0:
        secrets = range(args.secret + 1, args.secret + 1 + args.redraws)
        with console.status(f"the gate again on {len(chancy)} kernels with {args.redraws} other secrets"):
            redraws = redraw_gate(chancy, secrets)
        again = Table(title=f"the gate with secrets {secrets.start}..{secrets.stop - 1}: kernels a fresh draw decides")
        for col in ("kernel", "expected", "rejected", "failing draws (generator @ shape)"):
            again.add_column(col, overflow="fold")
        for file, runs in redraws.items():
            failing = sorted({f"{r['failing']['generator']} @ {r['failing']['shape']}" for r in runs if r["failing"]})
            again.add_row(file.removesuffix(".cu"), by_file[file].expected,
                          f"{sum(not r['accepted'] for r in runs)}/{len(runs)}", ", ".join(failing) or "-")
        console.print(again)
    if args.json:
        Path(args.json).write_text(json.dumps({"records": records, "summary": summary, "redraws": redraws}, indent=2))


if __name__ == "__main__":
    main()
