"""Environment latency and reward throughput: `env.step` through the reward gate, and a trainer's batch.

    python benchmarks/bench_env.py --problems matmul,softmax,layernorm,conv2d,sum_dim,relu --steps 6 --batch 64

Measures, in one run on one local Ray cluster (2 CPUs by default), with the default judge (the
reward gate: suite, pool of record, corner, fresh draws, search; `--checker NAME` measures a plain
checker with the prescreen instead), for each problem of `--problems`:
* `env.step` latency for its correct kernel (the substrate) on a cache miss: every step a text
  that differs in its tokens (a `#define` line), so the one-text cache, NVRTC, g++ and every run
  are cold for it; the first step of a problem (its pool's inputs and references made) apart;
* `env.step` latency for a wrong kernel, cache miss: the substrate's mutants (`mutants/`, in id
  order) that the gate rejects, one per step (a mutant the gate pays is skipped and counted);
* with `--batch N`: reward throughput of a batch of N distinct correct submissions, mixed over
  the problems, through `trl_reward` (TRL's GRPOTrainer signature; every stage on the Ray
  workers) with 1 and with 2 workers.
Targets (issue 31): p50 <= 2.0 s for a correct kernel and <= 1.0 s for a wrong one on every
problem; >= 1 correct submission/s with 2 workers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from rich.console import Console
from rich.table import Table


def _variant(source: str, k: int) -> str:
    """A text that differs in its tokens, with the same kernel: every cache keyed by text misses."""
    return f"#define MG_BENCH_VARIANT_{k} {k}\n{source}"


def _p(xs: list[float], q: float) -> float:
    return sorted(xs)[int(q * (len(xs) - 1))] if xs else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="matmul,softmax,layernorm,conv2d,sum_dim,relu")
    parser.add_argument("--steps", type=int, default=6, help="timed steps per problem and kind")
    parser.add_argument("--batch", type=int, default=0, help="submissions in the reward batch (0: none)")
    parser.add_argument("--checker", default=None, help="a plain checker instead of the reward gate")
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("MUTAGYM_CACHE", tempfile.mkdtemp(prefix="mutagym-bench-env-"))

    import ray
    from mutagym.envs.judge import Judge
    from mutagym.envs.kernel_task import KernelTaskEnv
    from mutagym.envs.trainer import trl_reward
    from mutagym.mutants.generate import mutants_for_source
    from mutagym.mutants.rule_schema import load_rules
    from mutagym.substrates.catalog import load_problem

    problems = args.problems.split(",")
    console = Console()
    console.print(f"problems {problems}, checker {args.checker}, {args.steps} steps, batch {args.batch}, "
                  f"{args.num_cpus} CPUs, load average {os.getloadavg()[0]:.1f}, MUTAGYM_CACHE={os.environ['MUTAGYM_CACHE']}")
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    judge = Judge(args.checker, backend="cpu", workers=args.num_cpus, secret=0)
    env = KernelTaskEnv(problems=problems, judge=judge)
    rules = load_rules()
    table = Table(title=f"env.step latency by problem, judged by {judge.checker_id} (token-distinct texts, cache miss)")
    for col in ("problem", "first step s", "correct p50 s", "correct p90 s", "wrong p50 s", "wrong p90 s",
                "wrong rejected at", "mutants paid (skipped)", "met (2.0 / 1.0 s)"):
        table.add_column(col)
    serial = 0

    def step(problem: str, text: str):
        nonlocal serial
        env.reset(seed=0, options={"problem": problem})
        serial += 1
        t = time.perf_counter()
        _, reward, *_, info = env.step(_variant(text, serial))
        return time.perf_counter() - t, reward, info

    for problem in problems:
        source = load_problem(problem).kernel_sources()["substrate"]
        first, reward, info = step(problem, source)
        assert reward == 1.0, (problem, info)
        correct = []
        for _ in range(args.steps):
            seconds, reward, info = step(problem, source)
            assert reward == 1.0, (problem, info)
            correct.append(seconds)
        wrong, stages, paid = [], {}, 0
        mutants, _ = mutants_for_source(problem, source, rules)
        for m in sorted(mutants, key=lambda m: m.id):
            if len(wrong) == args.steps:
                break
            seconds, reward, info = step(problem, m.source)
            if reward == 1.0:
                paid += 1
                continue
            wrong.append(seconds)
            where = (info.get("gate") or {}).get("stage") or info.get("category", "?")
            stages[where] = stages.get(where, 0) + 1
        met = statistics.median(correct) <= 2.0 and bool(wrong) and statistics.median(wrong) <= 1.0
        table.add_row(problem, f"{first:.2f}", f"{statistics.median(correct):.2f}", f"{_p(correct, 0.9):.2f}",
                      f"{statistics.median(wrong):.2f}" if wrong else "-", f"{_p(wrong, 0.9):.2f}",
                      ", ".join(f"{k} {v}" for k, v in sorted(stages.items())), str(paid), "yes" if met else "no")
        console.print(f"{problem}: correct {[round(x, 2) for x in correct]}, wrong {[round(x, 2) for x in wrong]}")
    env.close()
    console.print(table)

    if args.batch:
        sources = {p: load_problem(p).kernel_sources()["substrate"] for p in problems}
        kinds = [problems[k % len(problems)] for k in range(args.batch)]
        throughput = []
        for workers in (1, 2):
            reward_fn = trl_reward(args.checker, backend="cpu", workers=workers)
            warm = [f"```cuda\n{_variant(sources[p], -1 - workers)}```" for p in problems]
            reward_fn([f"write {p}" for p in problems], warm, problem=problems)     # warm: actors, pool inputs
            batch = [f"```cuda\n{_variant(sources[p], 100000 * workers + k)}```" for k, p in enumerate(kinds)]
            t = time.perf_counter()
            rewards = reward_fn([f"write {p}" for p in kinds], batch, problem=kinds)
            seconds = time.perf_counter() - t
            reward_fn.close()
            assert rewards == [1.0] * args.batch, rewards
            throughput.append((workers, seconds, args.batch / seconds))
        table = Table(title=f"trl_reward, batch of {args.batch} distinct correct submissions over {len(problems)} problems, on Ray")
        for col in ("workers", "seconds", "submissions/s", "vs 1 worker"):
            table.add_column(col)
        for workers, seconds, rate in throughput:
            table.add_row(str(workers), f"{seconds:.2f}", f"{rate:.2f}", f"{rate / throughput[0][2]:.2f}x")
        console.print(table)
    ray.shutdown()


if __name__ == "__main__":
    main()
