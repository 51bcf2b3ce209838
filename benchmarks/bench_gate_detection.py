"""Gate detection: the catalog's mutants judged by the reward gate and by the hardened suite alone.

    python benchmarks/bench_gate_detection.py                        # every problem, the defaults
    python benchmarks/bench_gate_detection.py --problems relu,softmax --per-problem 4 --json /tmp/a.json

The mutants are the catalog's (`mutants.generate.generate_pool`: every rule at every site of every
substrate). The shipped pool of record (`configs/pools/catalog.json.gz`, written from the catalog's
kill matrix) lists per problem the mutants the kill matrix *witnessed*; a generated mutant it does
not list was not witnessed (it survived every input of the matrix, or the matrix's quarantine or
compile gate dropped it). A deterministic sample per problem (`--per-problem` witnessed and
`--unwitnessed` unwitnessed mutants, evenly spaced by id) is judged twice, on Ray workers
(`Judge.judge_many`, a local cluster of `--num-cpus`):

- by the reward gate (`Judge()`: the committed hardened suite, the pool of record with its coverage
  inputs, fresh draws, three thread orders), the stage that rejected each mutant read from
  `Judgement.gate["stage"]` (`suite`, `pool`, `fresh`);
- by the hardened suite alone (`Judge(checker=default_checker())`, what the plain checker pays).

Every correct kernel (substrate and variants) of the problems is judged by the gate as well: a
reward other than 1 is a false reject (target: 0). `--seed` is the gate's secret (its fresh draws),
so two runs with the same arguments give the same verdicts (`--json` writes them, to compare).
A mutant that does not build (NVRTC or g++ refuses it; the kill matrix never ran those) is counted
apart; an `infra_error` (mutagym failed, not the kernel) is counted and printed, never as a kill.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections import Counter

from rich.console import Console
from rich.table import Table

STAGES = ("suite", "pool", "fresh")
NO_BUILD = ("compile_error", "source_error")


def witnessed_ids(pool_file) -> dict[str, set[str]]:
    """Per problem, the ids of the mutants the shipped pool's kill matrix witnessed."""
    doc = json.loads(gzip.decompress(pool_file.read_bytes()))
    return {pid: {m[0] for m in p["mutants"]} for pid, p in doc["problems"].items()}


def spaced(items: list, n: int) -> list:
    """`n` items evenly spaced through `items` (sorted by the caller): a deterministic sample."""
    return [items[k * len(items) // n] for k in range(min(n, len(items)))]


def sample(problems: list[str], per_problem: int, unwitnessed: int, witnessed: dict[str, set[str]]):
    """(mutants, stale): the sampled `Mutant`s with a `witnessed` flag per id, and per problem the
    pool file's ids the generator no longer produces (a substrate or rule changed since)."""
    from mutagym.mutants.generate import generate_pool
    pool = generate_pool(problems)
    by_problem: dict[str, list] = {}
    for m in sorted(pool.mutants, key=lambda m: m.id):
        by_problem.setdefault(m.problem, []).append(m)
    chosen, flags, stale = [], {}, {}
    for p in problems:
        ms = by_problem.get(p, [])
        known = witnessed.get(p, set())
        stale[p] = len(known - {m.id for m in ms})
        yes = [m for m in ms if m.id in known]
        no = [m for m in ms if m.id not in known]
        for m in spaced(yes, per_problem) + spaced(no, unwitnessed):
            chosen.append(m)
            flags[m.id] = m.id in known
    return chosen, flags, stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", help="comma-separated problem ids (default: every problem of the pool file)")
    parser.add_argument("--per-problem", type=int, default=2, help="witnessed mutants per problem")
    parser.add_argument("--unwitnessed", type=int, default=1, help="unwitnessed mutants per problem")
    parser.add_argument("--seed", type=int, default=0, help="the gate's secret (its fresh draws)")
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    parser.add_argument("--no-false-rejects", action="store_true", help="skip the correct kernels")
    parser.add_argument("--json", help="write every verdict here (sorted; two runs can be compared)")
    args = parser.parse_args()

    import ray
    from mutagym.envs.judge import Judge
    from mutagym.envs.pool import default_pool_file
    from mutagym.rewards.checker import default_checker
    from mutagym.substrates.catalog import load_problem

    console = Console(width=200)
    start = time.perf_counter()
    pool_file = default_pool_file()
    witnessed = witnessed_ids(pool_file)
    problems = sorted(args.problems.split(",")) if args.problems else sorted(witnessed)
    mutants, flags, stale = sample(problems, args.per_problem, args.unwitnessed, witnessed)
    kernels = [] if args.no_false_rejects else [
        (p, name, src) for p in problems for name, src in sorted(load_problem(p).kernel_sources().items())]
    console.print(f"{len(mutants)} mutants ({sum(flags.values())} witnessed) and {len(kernels)} correct kernels "
                  f"of {len(problems)} problems; pool file {pool_file.name}, seed {args.seed}")

    os.environ.pop("RAY_ADDRESS", None)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    seconds = {}
    try:
        t0 = time.perf_counter()
        alone = Judge(checker=default_checker(), prescreen=False, secret=args.seed)
        suite = alone.judge_many([(m.source, m.problem) for m in mutants])
        alone.close()
        seconds["suite alone"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        judge = Judge(secret=args.seed)
        gated = judge.judge_many([(m.source, m.problem) for m in mutants])
        seconds["gate, mutants"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        correct = judge.judge_many([(src, p) for p, _, src in kernels]) if kernels else []
        seconds["gate, correct kernels"] = time.perf_counter() - t0
        gate_id = judge.checker_id
        judge.close()
    finally:
        ray.shutdown()

    records = []
    for m, s, g in zip(mutants, suite, gated):
        records.append({"problem": m.problem, "mutant": m.id, "rule": m.rule, "witnessed": flags[m.id],
                        "suite_category": s.category, "suite_accepted": s.accepted,
                        "gate_category": g.category, "gate_accepted": g.accepted,
                        "gate_stage": (g.gate or {}).get("stage"),
                        "checker_alone_accepted": ((g.gate or {}).get("checker_alone") or {}).get("accepted")})
    correct_records = [{"problem": p, "kernel": name, "reward": j.reward, "category": j.category,
                        "stage": (j.gate or {}).get("stage"), "message": j.message[:200]}
                       for (p, name, _), j in zip(kernels, correct)]

    def counts(rows: list[dict]) -> dict:
        built = [r for r in rows if r["gate_category"] not in NO_BUILD and r["suite_category"] not in NO_BUILD]
        ok = [r for r in built if "infra_error" not in (r["gate_category"], r["suite_category"])]
        stages = Counter(r["gate_stage"] for r in ok if not r["gate_accepted"])
        return {"judged": len(rows), "no_build": len(rows) - len(built), "infra": len(built) - len(ok),
                "ran": len(ok), "suite": sum(not r["suite_accepted"] for r in ok),
                "gate": sum(not r["gate_accepted"] for r in ok), **{f"at_{s}": stages.get(s, 0) for s in STAGES},
                "gate_only": sum(r["suite_accepted"] and not r["gate_accepted"] for r in ok)}

    table = Table(title=f"gate detection ({gate_id}, seed {args.seed}) vs the hardened suite alone "
                        f"({default_checker().version_id}): {len(problems)} problems, "
                        f"{args.per_problem} witnessed + {args.unwitnessed} unwitnessed mutants per problem")
    cols = ("problem", "witnessed judged", "suite alone kills", "gate kills", "at suite", "at pool", "at fresh",
            "unwitnessed judged (ran)", "unw. suite alone kills", "unw. gate kills", "unw. at suite",
            "unw. at pool", "unw. at fresh", "correct kernels", "false rejects", "infra errors")
    for c in cols:
        table.add_column(c, justify="left" if c == "problem" else "right")
    totals = {"w": [], "u": [], "c": []}

    def row(name, w_rows, u_rows, c_rows):
        w, u = counts(w_rows), counts(u_rows)
        fr = sum(r["reward"] != 1 for r in c_rows)
        infra = w["infra"] + u["infra"] + sum(r["category"] == "infra_error" for r in c_rows)
        nb = f" ({w['no_build']} no build)" if w["no_build"] else ""
        table.add_row(name, f"{w['ran']}{nb}", str(w["suite"]), str(w["gate"]),
                      *(str(w[f"at_{s}"]) for s in STAGES), f"{u['judged']} ({u['ran']})", str(u["suite"]),
                      str(u["gate"]), *(str(u[f"at_{s}"]) for s in STAGES), str(len(c_rows)), str(fr), str(infra))

    for p in problems:
        w_rows = [r for r in records if r["problem"] == p and r["witnessed"]]
        u_rows = [r for r in records if r["problem"] == p and not r["witnessed"]]
        c_rows = [r for r in correct_records if r["problem"] == p]
        totals["w"] += w_rows
        totals["u"] += u_rows
        totals["c"] += c_rows
        row(p, w_rows, u_rows, c_rows)
    table.add_section()
    row("all", totals["w"], totals["u"], totals["c"])
    console.print(table)
    w, u = counts(totals["w"]), counts(totals["u"])
    if w["ran"]:
        console.print(f"witnessed mutants: suite alone {w['suite']}/{w['ran']} ({100 * w['suite'] / w['ran']:.1f} %), "
                      f"gate {w['gate']}/{w['ran']} ({100 * w['gate'] / w['ran']:.1f} %); "
                      f"unwitnessed that build and ran: gate kills {u['gate']}/{u['ran']}")
    rejects = [r for r in correct_records if r["reward"] != 1]
    console.print(f"correct kernels: {len(correct_records)}, rewards != 1: {len(rejects)}")
    for r in rejects:
        console.print(f"  [red]false reject[/red] {r['problem']}/{r['kernel']}: {r['category']} at {r['stage']}: "
                      f"{r['message']}")
    gate_only = [r for r in records if r["suite_accepted"] and not r["gate_accepted"]
                 and r["gate_category"] not in NO_BUILD + ("infra_error",)]
    for r in gate_only:
        console.print(f"  gate only ({'witnessed' if r['witnessed'] else 'unwitnessed'}): {r['problem']} "
                      f"{r['mutant']} {r['rule']} at {r['gate_stage']}")
    stale_total = sum(stale.values())
    if stale_total:
        console.print(f"pool-file mutants the generator no longer makes: {stale_total} "
                      f"({', '.join(f'{p} {n}' for p, n in stale.items() if n)})")
    console.print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items())
                  + f", whole run {time.perf_counter() - start:.1f}; load average "
                  + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gate": gate_id, "seed": args.seed, "mutants": records, "correct": correct_records}, f,
                      indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
