"""The `mutagym` command line: one subcommand per job, each printing a table (or JSON with --json).

A mistake on the command line (an unknown problem, generator, shape, checker or flag, a missing
file, a flag that needs another) is one line on stderr that names the flag and the value, with the
closest names, and exit status 2; `--debug` shows the traceback of any failure. Subcommands import
their machinery when they run, so `--help` and a mistake answer without loading torch or Ray.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 160)

EXIT_STATUS = """exit status:
  0  done (every kernel accepted)
  1  a kernel or a check failed
  2  a mistake on the command line (for `run`, also a submission the compilers refuse)
  3  mutagym itself failed (--debug shows the traceback)"""


# ---------------------------------------------------------------------------------- user errors
class UsageError(Exception):
    """A mistake on the command line: printed as one line on stderr, exit status 2, no traceback."""

    def __init__(self, message: str, prog: str | None = None):
        super().__init__(message)
        self.prog = prog


def _known(value: str, known: Sequence[str], what: str, where: str, listing: str = "") -> str:
    """`value` if it is one of `known`, else a UsageError naming `where` and the closest names."""
    if value in known:
        return value
    close = [repr(c) for c in difflib.get_close_matches(value, known, n=3, cutoff=0.6)]
    if close:
        hint = "did you mean " + (f"{', '.join(close[:-1])} or {close[-1]}" if len(close) > 1 else close[0]) + "?"
    else:
        hint = listing or "known: " + ", ".join(known)
    raise UsageError(f"{where} {value!r}: no such {what}; {hint}")


def _items(text: str, where: str) -> list[str]:
    """The entries of a comma-separated flag value (at least one)."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError(f"{where} {text!r}: empty list")
    return items


def _problem(value: str, where: str) -> str:
    from .substrates.catalog import list_problems
    return _known(value, list_problems(), "problem", where, "`mutagym problems` lists them")


def _problem_list(text: str | None, where: str = "--problems") -> list[str] | None:
    """Ids from comma-separated ids or globs (`'matmul*'`), in catalog order (what a command writes
    does not depend on how the flag was spelled); None (no flag): the command's default."""
    if text is None:
        return None
    from .substrates.catalog import list_problems
    catalog, chosen = list_problems(), []
    for item in _items(text, where):
        if any(ch in item for ch in "*?["):
            matches = fnmatch.filter(catalog, item)
            if not matches:
                raise UsageError(f"{where} {item!r} matches no problem of the catalog "
                                 "(`mutagym problems` lists them)")
        else:
            matches = [_problem(item, where)]
        chosen += matches
    return [p for p in catalog if p in chosen]


def _generators(text: str | None, where: str = "--generators") -> tuple[str, ...] | None:
    if text is None:
        return None
    from .rewards.generators import ALL_GENERATORS
    return tuple(_known(g, list(ALL_GENERATORS), "generator", where) for g in _items(text, where))


def _shape_class(name: str, where: str) -> str:
    from .rewards.shapes import SHAPE_CLASSES
    return _known(name, list(SHAPE_CLASSES), "shape class", where)


def _shape_classes(text: str | None, where: str = "--shape-classes") -> tuple[str, ...] | None:
    """None (the default choice), `none` (no class) or the named classes."""
    if text is None:
        return None
    if text.strip() == "none":
        return ()
    return tuple(_shape_class(c, where) for c in _items(text, where))


def _shape_presets(text: str | None, problems: Sequence[str], where: str) -> tuple[str, ...] | None:
    """Shape presets that at least one of `problems` has."""
    if text is None:
        return None
    from .substrates.catalog import load_problem
    known = sorted({name for p in problems for name in load_problem(p).preset_names})
    return tuple(_known(x, known, "shape preset", where) for x in _items(text, where))


def _shape(value: str, problem, where: str) -> str:
    """A preset of `problem`, or `@<class>` for a shape class of `rewards.shapes`."""
    if value.startswith("@"):
        from .rewards.shapes import SHAPE_CLASSES, shape_classes
        _known(value, [f"@{c}" for c in SHAPE_CLASSES], "shape class", where)
        return _known(value, [f"@{c}" for c in shape_classes(problem)], f"shape class of {problem.id}", where)
    return _known(value, problem.preset_names, f"shape preset of {problem.id}", where,
                  f"presets: {', '.join(problem.preset_names)}; or @CLASS for a shape class")


def _schedules(text: str, where: str) -> tuple[str, ...]:
    from .runtime.cases import parse_schedule
    out = []
    for s in _items(text, where):
        try:
            parse_schedule(s)
        except ValueError:
            raise UsageError(f"{where} {s!r}: no such thread order; expected ascending, descending or "
                             "shuffled[:SEED]") from None
        out.append(s)
    return tuple(out)


def _seeds(text: str, where: str = "--seeds") -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in _items(text, where))
    except ValueError:
        raise UsageError(f"{where} {text!r}: not a comma-separated list of integers") from None


def _at_least(value, low, where: str):
    if value is not None and value < low:
        raise UsageError(f"{where} {value!r}: must be at least {low}")
    return value


def _file(path: str, where: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{where} {path!r}: no such file")
    if not p.is_file():
        raise UsageError(f"{where} {path!r}: not a file")
    return p


def _text(path: str, where: str) -> str:
    try:
        return _file(path, where).read_text()
    except UnicodeDecodeError:
        raise UsageError(f"{where} {path!r}: not UTF-8 text") from None


def _checker(value: str, where: str):
    """The checker version named by a preset name or a .json/.toml file."""
    from .rewards.checker import UnknownCheckerError, list_checkers, load_checker
    if Path(value).suffix in (".json", ".toml") or "/" in value:
        _file(value, where)
    else:
        _known(value, list_checkers(), "checker", where, "known: " + ", ".join(list_checkers())
               + " (or the path of a .json / .toml checker file)")
    try:
        return load_checker(value)
    except (UnknownCheckerError, ValueError) as err:
        raise UsageError(f"{where} {value!r}: not a checker file: {_one_line(err)}") from err


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return textwrap.shorten(text, 600, placeholder=" [...]") if text else type(err).__name__


def _words(text: str, width: int) -> str:
    """`text` on one line, shortened at a word boundary (a table cell wraps it; never mid-word)."""
    return textwrap.shorten(" ".join(text.split()), width, placeholder=" [...]") if text.strip() else ""


# ---------------------------------------------------------------------------------- problems
def cmd_problems(args) -> int:
    from .substrates.catalog import list_problems, load_problem
    rows = []
    for pid in _problem_list(args.problems) or list_problems():
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
    from .rewards.generators import ALL_GENERATORS, NotApplicable, generate
    from .rewards.judging import build_fault, comparator_for, judge_kernel
    from .runtime import SubmissionError, compile
    from .runtime.nvrtc_gate import nvrtc_gate
    from .substrates.catalog import load_problem
    problem = load_problem(_problem(args.problem, "--problem"))
    source = _text(args.kernel, "KERNEL")
    generator = _known(args.generator, list(ALL_GENERATORS), "generator", "--generator")
    shape = _shape(args.shape, problem, "--shape")
    (schedule,) = _schedules(args.schedule, "--schedule")
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout!r}: must be more than 0 seconds")
    try:
        gen = generate(problem, generator, preset=shape, seed=args.seed)
    except NotApplicable as err:
        raise UsageError(f"--generator {generator!r} does not apply to {problem.id}: {_one_line(err)}") from None
    try:
        kernel = compile(source, backend=args.backend)
        # the compile gate `eval` applies (envs/judge.py, Judge._screen_source), whatever backend
        # runs the kernel: NVRTC accepts the text at the gate's architecture, or it is not run
        nvrtc_gate(source)
    except SubmissionError as err:   # NVRTC's refusal is a CompileError that says "NVRTC rejected"
        console.print(f"[red]rejected ({build_fault(err)}):[/red] {err}")
        if err.log:
            console.print(err.log)
        return 2
    [case] = judge_kernel(kernel, problem, [gen], comparator_for(problem), (schedule,),
                          timeout_s=args.timeout)[schedule]
    record = {"kernel": args.kernel, "problem": problem.id, "input": gen.id, "backend": kernel.backend,
              "schedule": schedule, "outcome": case.outcome, "message": case.message,
              "passed": case.passed,
              "outputs": {o.name: {"passed": o.passed, "max_abs": o.max_abs, "max_rel": o.max_rel,
                                   "mismatch_ratio": o.mismatch_ratio, "message": o.message}
                          for o in case.outputs}}
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        table = Table(title=f"{args.kernel} on {gen.id} ({kernel.backend}, {schedule}): {case.outcome}")
        for col in ("output", "verdict", "max abs err", "max rel err", "mismatched"):
            table.add_column(col)
        table.add_column("note", overflow="fold")
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
    from .envs.gate import default_contract
    from .substrates.prompt import task_prompt
    problem = _problem(args.problem, "PROBLEM")
    print(task_prompt(problem, default_contract(problem)))
    return 0


# ---------------------------------------------------------------------------------- dataset
def cmd_dataset(args) -> int:
    from rich.progress import track

    from .envs.dataset import prompt_rows, write_dataset
    from .substrates.catalog import list_problems
    ids = _problem_list(args.problems) or list_problems()
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

    from .rewards.verify import verify_problem
    from .substrates.catalog import list_problems, load_problem
    ids = _problem_list(args.problems) or list_problems()
    schedules = _schedules(args.schedules, "--schedules")
    reports = []
    with Progress(console=console, transient=True, disable=args.json) as progress:
        task = progress.add_task("verifying", total=len(ids))
        for pid in ids:
            progress.update(task, description=f"verifying {pid}")
            reports.append(verify_problem(load_problem(pid), backend=args.backend, schedules=schedules))
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
def cmd_killmatrix(args) -> int:
    from .envs.pool import pools_from_killmatrix, save_pools
    from .mutants.killmatrix import (KillMatrixSettings, ceilings_table, load_mutants,
                                     run_killmatrix, settings_table, summary_table)
    from .substrates.catalog import list_problems
    problems = _problem_list(args.problems)
    if args.pool:
        _file(args.pool, "--pool")
    settings = KillMatrixSettings(
        out=args.out, schedules=_schedules(args.schedules, "--schedules"),
        generators=_generators(args.generators),
        presets=_shape_presets(args.shape_presets, problems or list_problems(), "--shape-presets"),
        shape_classes=_shape_classes(args.shape_classes), seeds=_seeds(args.seeds),
        timeout_s=_at_least(args.timeout, 0.1, "--timeout"), address=args.address,
        num_cpus=_at_least(args.num_cpus, 1, "--num-cpus"), progress=not args.no_progress,
        ceiling=args.ceiling)
    console.print(settings_table(settings))
    try:
        mutants = load_mutants(problems, args.pool, args.out)
    except ValueError as err:
        if not args.pool:
            raise
        raise UsageError(f"--pool {args.pool!r}: {_one_line(err)}") from None
    result = run_killmatrix(mutants, settings)
    console.print(summary_table(result))
    if result.ceilings:
        console.print(ceilings_table(result))
    pools = save_pools(pools_from_killmatrix(result.out), Path(result.out) / "pool_of_record.json.gz")
    console.print(f"tables and manifest in {result.out}; pool of record (for prescreens) in {pools}")
    return 0


# ---------------------------------------------------------------------------------- mutate
def cmd_mutate(args) -> int:
    from .mutants.pool import build_pool
    build = build_pool(args.out, _problem_list(args.problems), workers=_at_least(args.workers, 1, "--workers"),
                       progress=not args.json)
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
    from .mutants.generate import generate_pool
    pool = generate_pool()
    found = [m for m in pool.mutants if m.id == args.id]
    if not found:
        kept = pool.duplicates.get(args.id)
        if kept:
            raise UsageError(f"ID {args.id!r}: a duplicate of mutant {kept!r} (the pool keeps that one)")
        close = difflib.get_close_matches(args.id, [m.id for m in pool.mutants], n=1, cutoff=0.75)
        hint = f"did you mean {close[0]!r}?" if close else ("ids are 16 hex digits (the `id` column of the pool table "
                                                 "`mutagym mutate` writes)")
        raise UsageError(f"ID {args.id!r}: no mutant of that id; {hint}")
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

    from .mutants.harden import QUICK_PROBLEMS, harden
    from .substrates.catalog import list_problems
    problems = _problem_list(args.problems)
    chosen = problems or (list(QUICK_PROBLEMS) if args.quick else list_problems())
    options = dict(budget=_at_least(args.budget, 1, "--budget"), quick=args.quick,
                   presets=_shape_presets(args.shape_presets, chosen, "--shape-presets"),
                   shape_classes=_shape_classes(args.shape_classes), generators=_generators(args.generators),
                   seeds=_seeds(args.seeds), schedules=_schedules(args.schedules, "--schedules"),
                   num_cpus=_at_least(args.num_cpus, 1, "--num-cpus"), address=args.address,
                   check_false_rejects=not args.no_false_rejects, progress=not args.json,
                   workers=_at_least(args.workers, 1, "--workers"), field_sets=_field_sets(args.field))
    with _StdoutToStderr() if args.json else contextlib.nullcontext():
        summary = harden(problems, args.out, **options)
    return _print_harden(args, summary)


def _field_sets(folders: list[str] | None) -> list[str]:
    """The `--field` folders, each checked to be a field-fault set that loads."""
    from .rewards.field_faults import load_field_set
    for folder in folders or ():
        try:
            load_field_set(folder)
        except ValueError as err:
            raise UsageError(f"--field {folder!r}: {err}") from None
    return list(folders or ())


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
    from .rewards.report import NOT_MEASURED
    for r in rows:
        fr = "-" if r["false_rejects"] is None else f"{r['false_rejects']}/{r['kernels_checked']}"
        detection = ([f"{_fmt_pct(r['detection'])} ({r['detected']}/{r['witnessed']})",
                      f"{_fmt_pct(r['low'])}-{_fmt_pct(r['high'])}", _fmt_pct(r["selection"]), _fmt_pct(r["heldout"])]
                     if r["measured"] else [NOT_MEASURED] * 4)
        table.add_row(r["checker"], *detection, fr, f"{r['median_inputs']:g} (max {r['max_inputs']})",
                      str(r["missing_inputs"]))
    console.print(table)
    for name, score in summary.scores.items():
        if not score.measured:
            console.print(f"[yellow]note:[/yellow] {name}: {NOT_MEASURED}: the kill matrix lacks its inputs for "
                          f"{', '.join(sorted(score.missing_inputs))} (run the kill matrix with its generators, "
                          "presets and seeds to score it)")
        if score.false_rejects:
            console.print(f"[red]false rejects:[/red] {name} rejects correct kernels: " + ", ".join(
                f"{f.problem}/{f.kernel}" for f in score.false_rejects) + " (report.md has the verdicts)")
    console.print(f"hardened checker: {summary.checker_path}")
    console.print(f"report: {summary.report}")
    return 0


# ---------------------------------------------------------------------------------- eval
def cmd_eval(args) -> int:
    from .envs.judge import Judge
    problem = _problem(args.problem, "--problem")
    sources = [_text(path, "FILE") for path in args.files]
    checker = _checker(args.checker, "--checker") if args.checker is not None else None
    if args.pool and args.killmatrix:
        raise UsageError("--pool and --killmatrix name the same thing (the pool of record): give one")
    pool = args.pool or args.killmatrix
    if pool:
        where = "--pool" if args.pool else "--killmatrix"
        if not Path(pool).exists():
            raise UsageError(f"{where} {pool!r}: no such file or folder")
        if checker is not None and not args.prescreen:
            raise UsageError(f"{where} needs --prescreen when --checker is given (a checker alone never "
                             "reads the pool of record)")
    if (args.address or args.num_cpus) and not args.prescreen:
        flag = "--address" if args.address else "--num-cpus"
        raise UsageError(f"{flag} needs --prescreen (only the prescreen runs on Ray)")
    judge = Judge(checker, prescreen=args.prescreen, backend=args.backend,
                  pool_file=pool, num_cpus=_at_least(args.num_cpus, 1, "--num-cpus"), address=args.address,
                  field_dir=None if args.no_field else args.field_dir)
    try:
        items = [(source, problem) for source in sources]
        judged = (judge.judge_many(items) if args.prescreen and len(items) > 1
                  else [judge.judge(source, p) for source, p in items])
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
    table = Table(title=f"{judge.checker_id} on {problem}")
    extra_columns = (("stage / order", "checker alone") if gated else
                     ("pool of record", "false accept/reject", "nearest mutant") if args.prescreen else ())
    for col in ("kernel", "verdict", "outcome"):
        table.add_column(col)
    table.add_column("message", overflow="fold", ratio=3)
    for col in extra_columns:
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
        elif args.prescreen and r["prescreen"] is None:     # mutagym failed before the pool ran
            extra = ("not run", "-", "-")
        elif args.prescreen:
            pre = r["prescreen"]
            pool_cell = (f"{pre['pool_failures']}/{pre['pool_size']} fail" if pre["pool_accepted"] is not None
                         else f"{pre['status']}: {_words(pre['message'], 80)}")
            flag = "false accept" if r["false_accept"] else ("false reject" if r["false_reject"] else "-")
            near = pre["nearest_mutant"]
            extra = (pool_cell, flag, f"{near['rule']} ({near['family']})" if near else "-")
        table.add_row(r["kernel"], "[green]accept[/green]" if r["accepted"] else "[red]reject[/red]",
                      r["outcome"], _words(r["message"], 600), *extra)
    console.print(table)
    if args.prescreen or gated:
        _print_leakage(judge.leakage.as_dict())
    return 0 if all(r["accepted"] for r in records) else 1


def cmd_leaks(args) -> int:
    from .envs.field_ledger import export_ledgers
    ledgers = args.ledgers or ["out/eval/field"]
    for folder in ledgers:
        if not Path(folder).is_dir():
            raise UsageError(f"--from {folder!r}: no such folder")
    try:
        manifest, added, total = export_ledgers(args.dir, ledgers)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.json:
        print(json.dumps({"manifest": str(manifest), "added": added, "kernels": total}))
    else:
        console.print(f"{manifest}: {added} kernel(s) added, {total} in the set")
    return 0


def cmd_envelopes(args) -> int:
    from rich.progress import Progress

    from .envs.envelopes import measure_pool_envelopes
    from .envs.gate import SCHEDULES
    from .envs.pool import default_pool_file
    path = Path(args.pool) if args.pool else default_pool_file()
    if path is None or not path.is_file():
        raise UsageError(f"--pool {args.pool!r}: no such pool file" if args.pool else "no pool file is shipped: give --pool")
    problems = _problem_list(args.problems)
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("envelopes", total=None)

        def advance(problem: str, done: int, total: int) -> None:
            progress.update(task, total=total, completed=done, description=f"envelopes ({problem})")
        try:
            counts = measure_pool_envelopes(path, schedules=SCHEDULES, problems=problems, progress=advance)
        except ValueError as err:
            raise UsageError(f"--pool {str(path)!r}: {_one_line(err)}") from None
    table = Table(title=f"envelopes in {path}")
    for col in ("problem", "inputs with an envelope"):
        table.add_column(col)
    for problem, n in counts.items():
        table.add_row(problem, str(n))
    table.add_row("total", str(sum(counts.values())))
    console.print(table)
    return 0


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
    from .rewards.checker import evaluate_source
    from .rewards.scoring import attribute_checkers, load_killmatrix, score_checker
    if args.kernels and not args.problem:
        raise UsageError("--kernels needs --problem (the problem the kernels are written for)")
    if args.problem and not args.kernels:
        raise UsageError("--problem is the problem of --kernels: give the kernels too")
    kernel_problem = _problem(args.problem, "--problem") if args.problem else None
    sources = {path: _text(path, "--kernels") for path in args.kernels or []}
    a, b = _checker(args.a, "A"), _checker(args.b, "B")
    if not Path(args.killmatrix).is_dir():
        raise UsageError(f"--killmatrix {args.killmatrix!r}: no such folder (`mutagym killmatrix --out DIR` "
                         "writes one)")
    try:
        km = load_killmatrix(args.killmatrix)
    except FileNotFoundError as err:
        raise UsageError(f"--killmatrix {args.killmatrix!r}: {_one_line(err)}") from None
    problems = ([_known(p, km.problems, "problem in this kill matrix", "--problems") for p in _items(args.problems, "--problems")]
                if args.problems else km.problems)
    from .rewards.report import NOT_MEASURED
    sa, sb = score_checker(a, km, problems=problems), score_checker(b, km, problems=problems)
    # a checker whose inputs the matrix did not all run has no figure (scoring.CheckerScore.measured)
    measured = sa.measured and sb.measured
    split = attribute_checkers(a, b, km, problems=problems).points() if measured else None
    kernels = []
    for path, source in sources.items():
        va = evaluate_source(a, kernel_problem, source)
        vb = evaluate_source(b, kernel_problem, source)
        kernels.append({"kernel": path, "problem": kernel_problem, "a_accepted": va.accepted,
                        "b_accepted": vb.accepted, "a_outcome": va.outcome, "b_outcome": vb.outcome})

    def side(s):
        if not s.measured:
            return {"checker": s.checker, "measured": False, "missing_inputs": s.missing_inputs}
        leak = s.leaked_reward()         # reward a binary reward pays to the wrong kernels accepted
        return {"checker": s.checker, "measured": True, "detection": s.detection,
                "detected": s.report.overall.detected, "leaked": leak["leaked"], "leaked_share": leak["share"],
                "leaked_per_family": leak["per_family"], "leaked_per_problem": leak["per_problem"]}

    record = {
        "a": side(sa), "b": side(sb),
        "witnessed": len(sa.witnessed), "attribution_points": split,
        "accepted_by_a_only": sorted(set(sb.killed) - set(sa.killed)) if measured else None,
        "accepted_by_b_only": sorted(set(sa.killed) - set(sb.killed)) if measured else None,
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
        if not r["measured"]:
            table.add_row(s.checker, *[NOT_MEASURED] * 3)
            continue
        only = record[f"accepted_by_{key}_only"]
        table.add_row(s.checker, _fmt_pct(s.detection), f"{r['leaked']} ({_fmt_pct(r['leaked_share'])})",
                      "-" if only is None else str(len(only)))
    console.print(table)
    if not measured:
        for s in (sa, sb):
            if not s.measured:
                console.print(f"[yellow]note:[/yellow] {s.checker}: {NOT_MEASURED}: the kill matrix lacks its "
                              f"inputs for {', '.join(sorted(s.missing_inputs))} (run the kill matrix with its "
                              "generators, presets and seeds, as `mutagym harden` does, to audit it)")
    else:
        _print_audit_split(record)
    for k in kernels:
        console.print(f"{k['kernel']}: A {'accept' if k['a_accepted'] else 'reject'} ({k['a_outcome']}), "
                      f"B {'accept' if k['b_accepted'] else 'reject'} ({k['b_outcome']})")
    return 0


def _print_audit_split(record: dict) -> None:
    """The audit's leak per fault family and the gain's split (both checkers measured)."""
    families = Table(title="leaked reward per fault family (binary reward: 1 per accepted wrong kernel)")
    for col in ("family", "witnessed", "A leaked", "B leaked"):
        families.add_column(col)
    for f, la in record["a"]["leaked_per_family"].items():
        lb = record["b"]["leaked_per_family"][f]
        families.add_row(f, str(la["witnessed"]), f"{la['leaked']} ({_fmt_pct(la['share'])})",
                         f"{lb['leaked']} ({_fmt_pct(lb['share'])})")
    console.print(families)
    console.print("gain of B over A (points): " + ", ".join(
        f"{k} {v:+.1f}" for k, v in record["attribution_points"].items()))


# ---------------------------------------------------------------------------------- the parser
class _Parser(argparse.ArgumentParser):
    """argparse's own mistakes (a missing argument, a bad int) become a one-line UsageError."""

    def error(self, message: str):
        raise UsageError(f"{message} (`{self.prog} --help` lists the flags)", prog=self.prog)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every flag's help ends with its default; a flag without one says its default in words."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.option_strings and not any(action.default is v for v in (None, False, argparse.SUPPRESS))
                and "%(default)" not in text):
            text += " (default: %(default)s)"
        return text


class _Renamed(argparse.Action):
    """A flag under its new name; the old spelling still works and prints a one-line warning."""

    def __init__(self, option_strings, dest, old: str, **kwargs):
        self.old = old
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == self.old:
            print(f"{parser.prog}: warning: {self.old} is deprecated, use {self.option_strings[0]}",
                  file=sys.stderr)
        setattr(namespace, self.dest, values)


def _shape_preset_flag(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--shape-presets", "--presets", dest="shape_presets", action=_Renamed, old="--presets",
                   metavar="PRESETS",
                   help=f"comma-separated shape presets of the problems (default: {default}; "
                        "--presets is the old, deprecated name)")


def _shape_class_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape-classes", metavar="CLASSES",
                   help="comma-separated shape classes of rewards.shapes, drawn as presets @CLASS "
                        "(default: the cheap classes unless --shape-presets names the shapes; none: no class)")


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import version

    def command(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                           epilog=EXIT_STATUS, formatter_class=_HelpFormatter)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the Python traceback of any failure")
        return p

    def json_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="print JSON instead of tables")

    def ray_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--address", help="Ray cluster to attach to (default: $RAY_ADDRESS, else a local cluster)")
        p.add_argument("--num-cpus", type=int, help="CPUs of a local Ray cluster (default: all)")

    parser = _Parser(prog="mutagym", description=__doc__, epilog=EXIT_STATUS, formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"mutagym {version('mutagym')}")
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of any failure")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = command("problems", "list the problem catalog")
    p.add_argument("--problems", help="comma-separated ids or globs such as 'matmul*' (default: all)")
    json_flag(p)
    p.set_defaults(func=cmd_problems)

    p = command("run", "run one kernel on one generated input and compare it with the fp64 reference")
    p.add_argument("kernel", metavar="KERNEL", help="path of a submission (.cu)")
    p.add_argument("--problem", required=True, help="problem id the kernel solves (required)")
    p.add_argument("--generator", default="normal", help="input generator (rewards.generators)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated input")
    p.add_argument("--shape", default="official", help="shape preset of the problem, or @CLASS for a shape class")
    p.add_argument("--schedule", default="ascending", help="thread order: ascending, descending or shuffled[:SEED]")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"),
                   help="where the kernel runs (auto: cuda if a GPU is present, else the CPU emulator)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds the run may take")
    json_flag(p)
    p.set_defaults(func=cmd_run)

    p = command("prompt", "print the task text the environment shows for a problem")
    p.add_argument("problem", metavar="PROBLEM", help="problem id")
    p.set_defaults(func=cmd_prompt)

    p = command("dataset", "write the task prompts for trainers (TRL, verl) as Parquet and JSONL")
    p.add_argument("--out", default="out/dataset", help="output folder (prompts.parquet, prompts.jsonl)")
    p.add_argument("--problems", help="comma-separated ids or globs such as 'matmul*' (default: all)")
    p.add_argument("--format", default="chat", choices=("chat", "text"),
                   help="prompt as a one-message chat (TRL conversational, verl) or as plain text")
    json_flag(p)
    p.set_defaults(func=cmd_dataset)

    p = command("verify", "check every substrate and variant against the fp64 reference")
    p.add_argument("--problems", help="comma-separated ids or globs (default: all)")
    p.add_argument("--backend", default="cpu", choices=("auto", "cpu", "cuda"), help="where the kernels run")
    p.add_argument("--schedules", default="ascending", help="comma-separated thread orders")
    json_flag(p)
    p.set_defaults(func=cmd_verify)

    p = command("mutate", "generate the mutant pool, compile-gate and quarantine it")
    p.add_argument("--problems", help="comma-separated ids or globs (default: all)")
    p.add_argument("--out", default="out/mutants", help="folder of the pool table (resumed if present)")
    p.add_argument("--workers", type=int, default=2, help="parallel processes")
    json_flag(p)
    p.set_defaults(func=cmd_mutate)

    p = command("mutant", "show one mutant's rule, site and diff")
    p.add_argument("id", metavar="ID", help="mutant id (16 hex digits)")
    json_flag(p)
    p.set_defaults(func=cmd_mutant)

    p = command("killmatrix", "run mutants x valid inputs x schedules on Ray")
    p.add_argument("--problems", help="comma-separated ids or globs (default: all)")
    p.add_argument("--pool", help="a mutant pool Parquet file (default: build the pool under OUT/pool)")
    p.add_argument("--out", default="out/killmatrix", help="output folder (resumed if it holds parts)")
    ray_flags(p)
    p.add_argument("--schedules", default="ascending,descending", help="comma-separated thread orders")
    p.add_argument("--generators", help="comma-separated generators (default: all)")
    _shape_preset_flag(p, "every preset of each problem")
    _shape_class_flag(p)
    p.add_argument("--seeds", default="0", help="comma-separated seeds of the inputs")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds one run may take")
    p.add_argument("--ceiling", action="store_true", help="also measure validity ceilings")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_killmatrix)

    p = command("harden", "mutate, run the kill matrix, score the presets, optimise suites, write the "
                          "hardened checker and the report")
    p.add_argument("--problems", help="comma-separated ids or globs (default: all; --quick: relu,softmax,layernorm)")
    p.add_argument("--budget", type=int, default=2, help="inputs per problem in the hardened suite")
    p.add_argument("--quick", action="store_true", help="3 problems at the official and remainder shapes")
    p.add_argument("--out", default="out/harden", help="output folder (pool, kill matrix, checker, report; resumed)")
    _shape_preset_flag(p, "all; --quick: official,remainder")
    _shape_class_flag(p)
    p.add_argument("--generators", help="comma-separated generators (default: all)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds of the kill matrix inputs")
    p.add_argument("--schedules", default="ascending,descending", help="comma-separated thread orders")
    ray_flags(p)
    p.add_argument("--workers", type=int, default=2, help="processes of the mutant pool build")
    p.add_argument("--no-false-rejects", action="store_true", help="skip running correct kernels through each checker")
    p.add_argument("--field", action="append", metavar="DIR",
                   help="a field-fault set (probe format, e.g. benchmarks/probe or what `mutagym leaks export` "
                        "wrote), repeatable: its wrong kernels join the kill matrix as population `field`, "
                        "its correct kernels the false-reject checks (default: none)")
    json_flag(p)
    p.set_defaults(func=cmd_harden)

    p = command("eval", "judge kernels with the reward gate or a checker version: a verdict per kernel")
    p.add_argument("files", nargs="+", metavar="FILE", help="submissions (.cu)")
    p.add_argument("--checker", default=None,
                   help="judge with this checker alone (preset name or checker file, .json/.toml) "
                        "(default: the reward gate: the committed hardened suite, the pool of record, "
                        "fresh cases, three thread orders)")
    p.add_argument("--problem", required=True, help="problem id the kernels solve (required)")
    p.add_argument("--backend", default="cpu", choices=("auto", "cpu", "cuda"), help="where the kernels run")
    p.add_argument("--prescreen", action="store_true",
                   help="run the gate's later stages on Ray workers; with --checker, also judge against "
                        "the pool of record (false accepts and rejects)")
    p.add_argument("--pool", help="pool of record: a pool file (.json.gz) or a kill-matrix folder "
                                  "(default: the shipped pool, else the validity gate's inputs)")
    p.add_argument("--killmatrix", help="the pool of record from a kill-matrix folder, as --pool "
                                        "(default: the shipped pool)")
    p.add_argument("--field-dir", default="out/eval/field",
                   help="field ledger folder, relative to the working directory: each kernel the gate "
                        "rejects on an input that witnesses its fault is kept there as one JSON file with "
                        "that input's id, for `mutagym leaks export` (kernels that did not build, or whose "
                        "launch was refused on every input tried, have no witness and are not kept)")
    p.add_argument("--no-field", action="store_true", help="keep no field ledger (nothing is written)")
    ray_flags(p)
    json_flag(p)
    p.set_defaults(func=cmd_eval)

    p = command("envelopes", "measure every pool input's envelope (the correct kernels' error on it, in the "
                             "gate's orders) and write it into the pool file (resumes where it stopped)")
    p.add_argument("--pool", help="the pool file (default: the shipped one)")
    p.add_argument("--problems", help="comma-separated problem ids or globs (default: every problem of the pool)")
    p.set_defaults(func=cmd_envelopes)

    p = command("leaks", "export the wrong kernels field ledgers kept as a field-fault set (probe format)")
    p.add_argument("action", choices=("export",), metavar="export", help="the one action: export")
    p.add_argument("dir", metavar="DIR", help="the field-fault set to write (probe.toml and one .cu per "
                                              "kernel; kernels a set there holds are kept)")
    p.add_argument("--from", dest="ledgers", action="append", metavar="LEDGER_DIR",
                   help="a field ledger folder, repeatable (default: out/eval/field, what `mutagym eval` keeps)")
    json_flag(p)
    p.set_defaults(func=cmd_leaks)

    p = command("audit", "compare two checker versions on a kill matrix's witnessed mutants")
    p.add_argument("a", metavar="A", help="checker A (preset name or file)")
    p.add_argument("b", metavar="B", help="checker B (preset name or file)")
    p.add_argument("--killmatrix", required=True, help="kill-matrix folder (required)")
    p.add_argument("--problems", help="comma-separated ids (default: every problem of the matrix)")
    p.add_argument("--kernels", nargs="+", metavar="FILE",
                   help="kernels to judge with both checkers (default: none; needs --problem)")
    p.add_argument("--problem", help="problem of --kernels (default: none; needs --kernels)")
    json_flag(p)
    p.set_defaults(func=cmd_audit)
    return parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def _check_words(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The command argv names, after checking that it and every `--flag` exist (argparse alone
    would report a misspelled flag as a missing required one, without a suggestion)."""
    commands = _commands(parser)
    words = [w for w in argv if not w.startswith("-")]
    if not words:
        return None
    name = words[0]
    if name not in commands:
        _known(name, sorted(commands), "command", "COMMAND", "`mutagym --help` lists them")
    flags = [f for action in commands[name]._actions for f in action.option_strings]
    for word in argv[argv.index(name) + 1:]:
        if word == "--":
            break
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and not any(f.startswith(flag) for f in flags):
            long_flags = [f for f in flags if f.startswith("--")]
            try:
                _known(flag, long_flags, "flag", "flag", f"`mutagym {name} --help` lists them")
            except UsageError as err:
                raise UsageError(str(err), prog=f"mutagym {name}") from None
    return name


def _user_mistakes() -> tuple[type[Exception], ...]:
    """Library errors that can only come from what the user typed (an id no pre-check caught)."""
    from .rewards.checker import UnknownCheckerError
    from .substrates.catalog import UnknownProblemError
    return UsageError, UnknownCheckerError, UnknownProblemError


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in (argv[:argv.index("--")] if "--" in argv else argv)
    parser = build_parser()
    name = None
    try:
        name = _check_words(parser, argv)
        args = parser.parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        if debug:
            raise
        prog = getattr(err, "prog", None) or (f"mutagym {name}" if name else "mutagym")
        if isinstance(err, _user_mistakes()):
            print(f"{prog}: error: {_one_line(err)}", file=sys.stderr)
            return 2
        print(f"{prog}: internal error: {type(err).__name__}: {_one_line(err)} (run it again with --debug "
              "for the traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
