"""The `mutagym` command line: one subcommand per job, each printing a table (or JSON with --json)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 160)


def _problem_ids(text: str | None) -> list[str]:
    from mutagym.substrates.catalog import list_problems
    return list_problems() if not text else [p.strip() for p in text.split(",") if p.strip()]


# ---------------------------------------------------------------------------------- problems
def cmd_problems(args) -> int:
    from mutagym.substrates.catalog import load_problem
    rows = []
    for pid in _problem_ids(args.problems):
        p = load_problem(pid)
        rows.append({
            "id": p.id, "category": p.spec.category, "title": p.spec.title,
            "dims": {n: d.official for n, d in p.spec.dims.items()},
            "inputs": [f"{i.name}:{i.role}:{i.dtype}" for i in p.spec.inputs],
            "outputs": [o.name for o in p.spec.outputs],
            "reduction_dim": p.spec.reduction_dim, "variants": len(p.spec.kernels.variants),
            "atol": p.spec.tolerance.atol, "rtol": p.spec.tolerance.rtol,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title=f"mutagym catalog: {len(rows)} problems")
    for col in ("id", "category", "official dims", "inputs (name:role)", "reduces", "variants", "atol/rtol"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["id"], r["category"], " ".join(f"{k}={v}" for k, v in r["dims"].items()),
                      ", ".join(s.rsplit(":", 1)[0] for s in r["inputs"]), r["reduction_dim"] or "-",
                      str(r["variants"]), f"{r['atol']:g}/{r['rtol']:g}")
    console.print(table)
    return 0


# ---------------------------------------------------------------------------------- run
def cmd_run(args) -> int:
    from mutagym.rewards.generators import generate
    from mutagym.rewards.judging import build_fault, comparator_for, judge_kernel
    from mutagym.runtime import SubmissionError, compile
    from mutagym.runtime.nvrtc import nvrtc_compile
    from mutagym.substrates.catalog import load_problem
    problem = load_problem(args.problem)
    source = Path(args.kernel).read_text()
    try:
        kernel = compile(source, backend=args.backend)
        # the compile gate `eval` applies (envs/judge.py, Judge._screen_source), whatever backend
        # runs the kernel: NVRTC accepts the text at the gate's architecture, or it is not run
        nvrtc_compile(source)
    except SubmissionError as err:   # NVRTC's refusal is a CompileError that says "NVRTC rejected"
        console.print(f"[red]rejected ({build_fault(err)}):[/red] {err}")
        if err.log:
            console.print(err.log)
        return 2
    gen = generate(problem, args.generator, preset=args.shape, seed=args.seed)
    [case] = judge_kernel(kernel, problem, [gen], comparator_for(problem), (args.schedule,),
                          timeout_s=args.timeout)[args.schedule]
    record = {"kernel": args.kernel, "problem": problem.id, "input": gen.id, "backend": kernel.backend,
              "schedule": args.schedule, "outcome": case.outcome, "message": case.message,
              "passed": case.passed,
              "outputs": {o.name: {"passed": o.passed, "max_abs": o.max_abs, "max_rel": o.max_rel,
                                   "mismatch_ratio": o.mismatch_ratio, "message": o.message}
                          for o in case.outputs}}
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        table = Table(title=f"{args.kernel} on {gen.id} ({kernel.backend}, {args.schedule}): {case.outcome}")
        for col in ("output", "verdict", "max abs err", "max rel err", "mismatched", "note"):
            table.add_column(col)
        if not case.outputs:
            table.add_row("-", f"[red]{case.outcome}[/red]", "-", "-", "-", case.message)
        for name, o in record["outputs"].items():
            table.add_row(name, "[green]pass[/green]" if o["passed"] else "[red]fail[/red]",
                          f"{o['max_abs']:.3g}", f"{o['max_rel']:.3g}", f"{o['mismatch_ratio']:.2%}", o["message"])
        console.print(table)
        if case.stdout:
            console.print(f"device printf:\n{case.stdout}")
    return 0 if case.passed else 1


# ---------------------------------------------------------------------------------- prompt
def cmd_prompt(args) -> int:
    from mutagym.envs.gate import default_contract
    from mutagym.substrates.prompt import task_prompt
    print(task_prompt(args.problem, default_contract(args.problem)))
    return 0


# ---------------------------------------------------------------------------------- dataset
def cmd_dataset(args) -> int:
    from rich.progress import track

    from mutagym.envs.dataset import prompt_rows, write_dataset
    from mutagym.envs.kernel_task import select_problems
    try:
        ids = select_problems(args.problems)
    except ValueError as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    rows = list(track(prompt_rows(ids, chat=args.format == "chat"), total=len(ids), console=console,
                      description="writing prompts", transient=True, disable=args.json))
    paths = write_dataset(rows, args.out)
    if args.json:
        print(json.dumps({"rows": len(rows), "problems": ids, "format": args.format,
                          **{kind: str(path) for kind, path in paths.items()}}, indent=2))
        return 0
    title = f"mutagym dataset: {len(rows)} prompts ({args.format} format)"
    table = Table(title=title, min_width=len(title) + 4)
    for col in ("problem", "prompt chars"):
        table.add_column(col)
    for row in rows:
        text = row["prompt"][0]["content"] if args.format == "chat" else row["prompt"]
        table.add_row(row["problem"], str(len(text)))
    console.print(table)
    console.print(f"wrote {paths['parquet']} and {paths['jsonl']}", soft_wrap=True)
    return 0


# ---------------------------------------------------------------------------------- verify
def cmd_verify(args) -> int:
    from rich.progress import Progress

    from mutagym.rewards.verify import verify_problem
    from mutagym.substrates.catalog import load_problem
    ids = _problem_ids(args.problems)
    reports = []
    with Progress(console=console, transient=True, disable=args.json) as progress:
        task = progress.add_task("verifying", total=len(ids))
        for pid in ids:
            progress.update(task, description=f"verifying {pid}")
            reports.append(verify_problem(load_problem(pid), backend=args.backend,
                                          schedules=tuple(args.schedules.split(","))))
            progress.advance(task)
    failed = [f for r in reports for f in r.failures]
    if args.json:
        print(json.dumps([{"problem": r.problem, "kernels": r.kernels, "inputs": r.inputs, "runs": r.runs,
                           "passed": r.passed, "max_abs": r.max_abs, "max_rel": r.max_rel,
                           "tolerance_used": r.tolerance_used, "failures": [str(f) for f in r.failures],
                           "degenerate": r.degenerate} for r in reports], indent=2))
    else:
        table = Table(title="mutagym verify: correct kernels vs the fp64 reference")
        for col in ("problem", "kernels", "inputs", "runs", "verdict", "max abs err", "max rel err",
                    "tolerance used", "degenerate under uniform01"):
            table.add_column(col)
        for r in reports:
            table.add_row(r.problem, str(len(r.kernels)), str(r.inputs), str(r.runs),
                          "[green]pass[/green]" if r.passed else f"[red]{len(r.failures)} failed[/red]",
                          f"{r.max_abs:.2e}", f"{r.max_rel:.2e}", f"{r.tolerance_used:.1%}",
                          "; ".join(r.degenerate) or "-")
        console.print(table)
        for f in failed[:50]:
            console.print(f"[red]FAIL[/red] {f}")
    return 1 if failed else 0


# ---------------------------------------------------------------------------------- killmatrix
def _shape_classes(text: str | None) -> tuple[str, ...] | None:
    """`--shape-classes`: None (the default choice), `none` (no class) or a comma-separated list."""
    if text is None:
        return None
    return () if text.strip() == "none" else tuple(c for c in text.split(",") if c)


def cmd_killmatrix(args) -> int:
    from mutagym.mutants.killmatrix import (KillMatrixSettings, ceilings_table, load_mutants,
                                            run_killmatrix, settings_table, summary_table)
    settings = KillMatrixSettings(
        out=args.out, schedules=tuple(s for s in args.schedules.split(",") if s),
        generators=tuple(args.generators.split(",")) if args.generators else None,
        presets=tuple(args.presets.split(",")) if args.presets else None,
        shape_classes=_shape_classes(args.shape_classes),
        seeds=tuple(int(s) for s in args.seeds.split(",")), timeout_s=args.timeout,
        address=args.address, num_cpus=args.num_cpus, progress=not args.no_progress,
        ceiling=args.ceiling)
    console.print(settings_table(settings))
    mutants = load_mutants(_problem_ids(args.problems) if args.problems else None, args.pool, args.out)
    result = run_killmatrix(mutants, settings)
    console.print(summary_table(result))
    if result.ceilings:
        console.print(ceilings_table(result))
    from mutagym.envs.pool import pools_from_killmatrix, save_pools
    pools = save_pools(pools_from_killmatrix(result.out), Path(result.out) / "pool_of_record.json.gz")
    console.print(f"tables and manifest in {result.out}; pool of record (for prescreens) in {pools}")
    return 0


# ---------------------------------------------------------------------------------- mutate
def cmd_mutate(args) -> int:
    from mutagym.mutants.pool import build_pool
    build = build_pool(args.out, _problem_ids(args.problems) if args.problems else None,
                       workers=args.workers, progress=not args.json)
    counts = build.counts()
    families = sorted({f for f, _ in counts})
    statuses = ("compilable", "uncompilable", "quarantined")
    if args.json:
        print(json.dumps({"pool": str(build.path), "mutants": len(build.pool.mutants),
                          "judged_now": build.judged_now, "duplicates": len(build.pool.duplicates),
                          "counts": {f: {s: counts.get((f, s), 0) for s in statuses} for f in families}},
                         indent=2))
        return 0
    table = Table(title=f"mutant pool: {len(build.pool.mutants)} mutants "
                        f"({build.judged_now} judged now, {len(build.pool.duplicates)} duplicates dropped)")
    table.add_column("family")
    for s in statuses:
        table.add_column(s, justify="right")
    table.add_column("problems with a compilable mutant", justify="right")
    for f in families:
        problems = {m.problem for m in build.pool.mutants
                    if m.family == f and build.verdicts[m.id].status == "compilable"}
        table.add_row(f, *(str(counts.get((f, s), 0)) for s in statuses), str(len(problems)))
    table.add_row("total", *(str(sum(counts.get((f, s), 0) for f in families)) for s in statuses), "")
    console.print(table)
    console.print(f"pool written to {build.path}")
    return 0


def cmd_mutant(args) -> int:
    from mutagym.mutants.generate import generate_pool
    pool = generate_pool()
    found = [m for m in pool.mutants if m.id == args.id]
    if not found:
        kept = pool.duplicates.get(args.id)
        hint = f": a duplicate of {kept}" if kept else " (ids are 16 hex digits; see `mutagym mutate --json`)"
        console.print(f"[red]no mutant {args.id!r}[/red]{hint}")
        return 1
    m = found[0]
    if args.json:
        print(json.dumps(m.to_dict(), indent=2))
    else:
        console.print(f"{m.id}  {m.problem}  {m.family}/{m.rule}  line {m.line}: {m.message}")
        print(m.diff)
    return 0


# ---------------------------------------------------------------------------------- harden
def _fmt_pct(x) -> str:
    import math
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


class _StdoutToStderr:
    """Send file descriptor 1 to stderr for a while (libraries such as HiGHS print a banner to the
    process's stdout, which would corrupt --json output)."""

    def __enter__(self):
        import os
        sys.stdout.flush()
        self._saved = os.dup(1)
        os.dup2(2, 1)
        return self

    def __exit__(self, *exc):
        import os
        sys.stdout.flush()
        os.dup2(self._saved, 1)
        os.close(self._saved)
        return False


def cmd_harden(args) -> int:
    import contextlib

    from mutagym.rewards.harden import harden
    with _StdoutToStderr() if args.json else contextlib.nullcontext():
        summary = _run_harden(args, harden)
    return _print_harden(args, summary)


def _run_harden(args, harden):
    return harden(_problem_ids(args.problems) if args.problems else None, args.out,
                  budget=args.budget, quick=args.quick,
                  presets=tuple(args.presets.split(",")) if args.presets else None,
                  shape_classes=_shape_classes(args.shape_classes),
                  generators=tuple(args.generators.split(",")) if args.generators else None,
                  seeds=tuple(int(s) for s in args.seeds.split(",")),
                  schedules=tuple(s for s in args.schedules.split(",") if s),
                  num_cpus=args.num_cpus, address=args.address,
                  check_false_rejects=not args.no_false_rejects, progress=not args.json,
                  workers=args.workers)


def _print_harden(args, summary) -> int:
    rows = summary.rows()
    per_problem = {p: {"suite": ph.suite, "tolerance": ph.tol, "selection": ph.selection_rate,
                       "heldout": ph.heldout_rate, "witnessed": ph.witnessed, "method": ph.method}
                   for p, ph in summary.result.problems.items()}
    if args.json:
        import math

        def clean(v):
            return None if isinstance(v, float) and math.isnan(v) else v
        print(json.dumps({"out": str(summary.out), "report": str(summary.report),
                          "checker": str(summary.checker_path), "problems": summary.problems,
                          "seconds": round(summary.seconds, 1),
                          "stage_seconds": {k: round(v, 1) for k, v in summary.stage_seconds.items()},
                          "checkers": [{k: clean(v) for k, v in r.items()} for r in rows],
                          "hardened": {p: {k: clean(v) for k, v in d.items()} for p, d in per_problem.items()}},
                         indent=2))
        return 0
    table = Table(title=f"checkers on {sum(1 for _ in summary.problems)} problem(s), "
                        f"{rows[0]['witnessed'] if rows else 0} witnessed mutants "
                        f"({summary.seconds:.0f} s)")
    for col in ("checker", "detection", "95% CI", "selection", "held-out", "false rejects",
                "inputs/problem", "missing inputs"):
        table.add_column(col, justify="left" if col == "checker" else "right")
    for r in rows:
        fr = "-" if r["false_rejects"] is None else f"{r['false_rejects']}/{r['kernels_checked']}"
        table.add_row(r["checker"], f"{_fmt_pct(r['detection'])} ({r['detected']}/{r['witnessed']})",
                      f"{_fmt_pct(r['low'])}-{_fmt_pct(r['high'])}", _fmt_pct(r["selection"]),
                      _fmt_pct(r["heldout"]), fr, f"{r['median_inputs']:g} (max {r['max_inputs']})",
                      str(r["missing_inputs"]))
    console.print(table)
    for name, score in summary.scores.items():
        blind = sorted(p for p, used in score.inputs_used.items() if not used)
        if blind:
            console.print(f"[yellow]note:[/yellow] {name}: none of its inputs is in the kill matrix for "
                          f"{', '.join(blind)} (scored as detecting nothing there; run the kill matrix "
                          "with its generators, presets and seeds to score it)")
        if score.false_rejects:
            console.print(f"[red]false rejects:[/red] {name} rejects correct kernels: " + ", ".join(
                f"{f.problem}/{f.kernel}" for f in score.false_rejects) + " (report.md has the verdicts)")
    console.print(f"hardened checker: {summary.checker_path}")
    console.print(f"report: {summary.report}")
    return 0


# ---------------------------------------------------------------------------------- eval
def cmd_eval(args) -> int:
    from mutagym.envs.judge import Judge
    judge = Judge(args.checker, prescreen=args.prescreen, backend=args.backend,
                  pool_file=args.pool or args.killmatrix, num_cpus=args.num_cpus, address=args.address)
    try:
        items = [(Path(path).read_text(), args.problem) for path in args.files]
        judged = (judge.judge_many(items) if args.prescreen and len(items) > 1
                  else [judge.judge(source, problem) for source, problem in items])
    finally:
        judge.close()
    records = []
    gated = judge.gate is not None
    for path, j in zip(args.files, judged):
        record = {"kernel": path, **j.info()}
        pre = j.prescreen or {}
        if args.prescreen and not gated:
            record.update(false_accept=pre.get("false_accept"), false_reject=pre.get("false_reject"),
                          pool_accepted=pre.get("pool_accepted"), pool_outcome=pre.get("status"))
        records.append(record)
    if args.json:
        print(json.dumps(records, indent=2, default=str))
        return 0 if all(r["accepted"] for r in records) else 1
    table = Table(title=f"{judge.checker_id} on {args.problem}")
    extra_columns = (("stage / order", "checker alone") if gated else
                     ("pool of record", "false accept/reject", "nearest mutant") if args.prescreen else ())
    for col in ("kernel", "verdict", "outcome", "message") + extra_columns:
        table.add_column(col)
    for r in records:
        extra = ()
        if gated and r["gate"] is not None:
            g = r["gate"]
            alone = g["checker_alone"]
            extra = (f"{g['stage']} / {g['schedule']}" if g["stage"] else "all passed",
                     "would pay: false accept" if alone["false_accept"] else
                     ("accept" if alone["accepted"] else "reject"))
        elif gated:
            extra = ("-", "-")
        elif args.prescreen:
            pre = r["prescreen"]
            pool = (f"{pre['pool_failures']}/{pre['pool_size']} fail" if pre["pool_accepted"] is not None
                    else f"{pre['status']}: {pre['message'][:60]}")
            flag = "false accept" if r["false_accept"] else ("false reject" if r["false_reject"] else "-")
            near = pre["nearest_mutant"]
            extra = (pool, flag, f"{near['rule']} ({near['family']})" if near else "-")
        table.add_row(r["kernel"], "[green]accept[/green]" if r["accepted"] else "[red]reject[/red]",
                      r["outcome"], r["message"][:120], *extra)
    console.print(table)
    if args.prescreen or gated:
        _print_leakage(judge.leakage.as_dict())
    return 0 if all(r["accepted"] for r in records) else 1


def _print_leakage(totals: dict) -> None:
    """The judge's running leakage totals per checker or gate version."""
    table = Table(title="reward leakage")
    for col in ("judged by", "judged", "false accepts", "leaked reward", "false rejects", "withheld reward"):
        table.add_column(col)
    for version, t in totals.items():
        if "checker_alone_false_accepts" in t:   # a gate: what the plain checker alone would have leaked
            table.add_row(f"{version} (its checker alone)", str(t["judged"]), str(t["checker_alone_false_accepts"]),
                          f"{t['checker_alone_leaked_reward']:g}", "-", "-")
        else:
            table.add_row(version, str(t["prescreened"]), str(t["false_accepts"]), f"{t['leaked_reward']:g}",
                          str(t["false_rejects"]), f"{t['withheld_reward']:g}")
    console.print(table)


# ---------------------------------------------------------------------------------- audit
def cmd_audit(args) -> int:
    from mutagym.rewards.checker import evaluate_source, load_checker
    from mutagym.rewards.scoring import attribute_checkers, load_killmatrix, score_checker
    a, b = load_checker(args.a), load_checker(args.b)
    km = load_killmatrix(args.killmatrix)
    problems = _problem_ids(args.problems) if args.problems else km.problems
    sa, sb = score_checker(a, km, problems=problems), score_checker(b, km, problems=problems)
    split = attribute_checkers(a, b, km, problems=problems).points()
    kernels = []
    for path in args.kernels or []:
        va = evaluate_source(a, args.problem, Path(path).read_text())
        vb = evaluate_source(b, args.problem, Path(path).read_text())
        kernels.append({"kernel": path, "problem": args.problem, "a_accepted": va.accepted,
                        "b_accepted": vb.accepted, "a_outcome": va.outcome, "b_outcome": vb.outcome})
    def side(s):
        leak = s.leaked_reward()         # reward a binary reward pays to the wrong kernels accepted
        return {"checker": s.checker, "detection": s.detection, "detected": s.report.overall.detected,
                "leaked": leak["leaked"], "leaked_share": leak["share"],
                "leaked_per_family": leak["per_family"], "leaked_per_problem": leak["per_problem"]}

    record = {
        "a": side(sa), "b": side(sb),
        "witnessed": len(sa.witnessed), "attribution_points": split,
        "accepted_by_a_only": sorted(set(sb.killed) - set(sa.killed)),
        "accepted_by_b_only": sorted(set(sa.killed) - set(sb.killed)),
        "kernels": kernels,
    }
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    table = Table(title=f"audit on {record['witnessed']} witnessed mutants of {len(problems)} problem(s)")
    for col in ("checker", "detection", "leaked reward (wrong kernels accepted)", "accepted only here"):
        table.add_column(col)
    for key, s in (("a", sa), ("b", sb)):
        r = record[key]
        table.add_row(s.checker, _fmt_pct(s.detection), f"{r['leaked']} ({_fmt_pct(r['leaked_share'])})",
                      str(len(record[f"accepted_by_{key}_only"])))
    console.print(table)
    families = Table(title="leaked reward per fault family (binary reward: 1 per accepted wrong kernel)")
    for col in ("family", "witnessed", "A leaked", "B leaked"):
        families.add_column(col)
    for f, la in record["a"]["leaked_per_family"].items():
        lb = record["b"]["leaked_per_family"][f]
        families.add_row(f, str(la["witnessed"]), f"{la['leaked']} ({_fmt_pct(la['share'])})",
                         f"{lb['leaked']} ({_fmt_pct(lb['share'])})")
    console.print(families)
    console.print("gain of B over A (points): " + ", ".join(f"{k} {v:+.1f}" for k, v in split.items()))
    for k in kernels:
        console.print(f"{k['kernel']}: A {'accept' if k['a_accepted'] else 'reject'} ({k['a_outcome']}), "
                      f"B {'accept' if k['b_accepted'] else 'reject'} ({k['b_outcome']})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mutagym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("problems", help="list the problem catalog")
    p.add_argument("--problems", help="comma-separated ids (default: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_problems)

    p = sub.add_parser("run", help="run one kernel on one generated input and compare with fp64")
    p.add_argument("kernel", help="path to a submission (.cu)")
    p.add_argument("--problem", required=True)
    p.add_argument("--generator", default="normal")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shape", default="official", help="shape preset")
    p.add_argument("--schedule", default="ascending")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("prompt", help="print the task text the environment shows for a problem")
    p.add_argument("problem")
    p.set_defaults(func=cmd_prompt)

    p = sub.add_parser("dataset", help="write the task prompts for trainers (TRL, verl) as Parquet and JSONL")
    p.add_argument("--out", required=True, help="output folder (prompts.parquet, prompts.jsonl)")
    p.add_argument("--problems", help="comma-separated ids or globs such as 'matmul*' (default: all)")
    p.add_argument("--format", default="chat", choices=("chat", "text"),
                   help="prompt as a one-message chat (TRL conversational, verl) or as plain text")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_dataset)

    p = sub.add_parser("verify", help="check every substrate and variant against the fp64 reference")
    p.add_argument("--problems", help="comma-separated ids (default: all)")
    p.add_argument("--backend", default="cpu", choices=("auto", "cpu", "cuda"))
    p.add_argument("--schedules", default="ascending", help="comma-separated thread orders")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("mutate", help="generate the mutant pool, compile-gate and quarantine it")
    p.add_argument("--problems", help="comma-separated ids (default: all)")
    p.add_argument("--out", default="mutants", help="folder of the pool table (resumed if present)")
    p.add_argument("--workers", type=int, default=2, help="parallel processes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_mutate)

    p = sub.add_parser("mutant", help="show one mutant's diff")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_mutant)

    p = sub.add_parser("killmatrix", help="run mutants x valid inputs x schedules on Ray")
    p.add_argument("--problems", help="comma-separated ids (default: all)")
    p.add_argument("--pool", help="a mutant pool Parquet file (default: generate the mutants)")
    p.add_argument("--out", default="killmatrix", help="output folder (resumed if it holds parts)")
    p.add_argument("--address", help="Ray cluster to attach to (default: $RAY_ADDRESS, else local)")
    p.add_argument("--num-cpus", type=int, help="CPUs of a local Ray cluster (default: all)")
    p.add_argument("--schedules", default="ascending,descending", help="comma-separated thread orders")
    p.add_argument("--generators", help="comma-separated generators (default: all)")
    p.add_argument("--presets", help="comma-separated shape presets (default: all)")
    p.add_argument("--shape-classes", help="comma-separated shape classes of rewards.shapes drawn as presets @CLASS "
                   "(default: the cheap classes unless --presets names the shapes; none: no class)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--timeout", type=float, default=10.0, help="per-run timeout in seconds")
    p.add_argument("--ceiling", action="store_true", help="also measure validity ceilings")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_killmatrix)

    p = sub.add_parser("harden", help="mutate, kill matrix, score presets, optimise suites, write the hardened checker and report")
    p.add_argument("--problems", help="comma-separated ids (default: all; --quick: relu,softmax,layernorm)")
    p.add_argument("--budget", type=int, default=2, help="inputs per problem in the hardened suite")
    p.add_argument("--quick", action="store_true", help="3 problems, official and remainder shapes")
    p.add_argument("--out", default="harden", help="output folder (pool, kill matrix, checker, report; resumed)")
    p.add_argument("--presets", help="comma-separated shape presets (default: all; --quick: official,remainder)")
    p.add_argument("--shape-classes", help="comma-separated shape classes of rewards.shapes drawn as presets @CLASS "
                   "(default: the cheap classes unless --presets names the shapes; none: no class)")
    p.add_argument("--generators", help="comma-separated generators (default: all)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds of the kill matrix inputs")
    p.add_argument("--schedules", default="ascending,descending", help="comma-separated thread orders")
    p.add_argument("--num-cpus", type=int, help="CPUs of a local Ray cluster (default: all)")
    p.add_argument("--address", help="Ray cluster to attach to")
    p.add_argument("--workers", type=int, default=2, help="processes of the mutant pool build")
    p.add_argument("--no-false-rejects", action="store_true", help="skip running correct kernels through each checker")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_harden)

    p = sub.add_parser("eval", help="judge kernels with a checker version: a verdict per kernel")
    p.add_argument("files", nargs="+", metavar="FILE", help="submissions (.cu)")
    p.add_argument("--checker", default=None,
                   help="judge with this checker alone (preset name or checker file, .json/.toml); "
                        "default: the reward gate (the committed hardened suite, the pool of record, "
                        "fresh cases, three thread orders)")
    p.add_argument("--problem", required=True)
    p.add_argument("--backend", default="cpu", choices=("auto", "cpu", "cuda"))
    p.add_argument("--prescreen", action="store_true",
                   help="also judge against the pool of record on Ray workers (false accepts and rejects)")
    p.add_argument("--pool", help="pool of record: a pool file (.json.gz) or a kill-matrix folder "
                                  "(default: the shipped pool, else the validity gate's inputs)")
    p.add_argument("--killmatrix", help="same as --pool with a kill-matrix folder")
    p.add_argument("--num-cpus", type=int, help="CPUs of a local Ray cluster (default: all)")
    p.add_argument("--address", help="Ray cluster to attach to (default: $RAY_ADDRESS, else a local one)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("audit", help="compare two checker versions on a kill matrix's witnessed pool")
    p.add_argument("a", help="checker A (preset name or file)")
    p.add_argument("b", help="checker B (preset name or file)")
    p.add_argument("--killmatrix", required=True, help="kill-matrix folder")
    p.add_argument("--problems", help="comma-separated ids (default: all in the matrix)")
    p.add_argument("--kernels", nargs="*", metavar="FILE", help="kernels to judge with both")
    p.add_argument("--problem", help="problem of --kernels")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
