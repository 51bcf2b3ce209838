"""Environment latency and reward throughput: `env.step` through the reward gate, and a trainer's batch.

    python benchmarks/bench_env.py --problem sum_dim --steps 12 --batch 64

Measures, in one run on one local Ray cluster (2 CPUs by default), with the default judge (the
reward gate: suite, pool of record, fresh draws, three thread orders; `--checker NAME` measures a
plain checker with the prescreen instead):
* `env.step` latency for a correct reduction kernel: cache miss (every step a new text, so NVRTC,
  g++ and every run are cold for it) and cache hit (the same text again); the first step (cluster
  start, the pool's inputs and references made) is reported apart;
* `env.step` latency for a wrong kernel (the substrate with its result scaled by 1.001), cache miss;
* reward throughput of a batch of `--batch` distinct correct submissions through `trl_reward`
  (TRL's GRPOTrainer signature; all runs on the Ray workers) with 1 and with 2 workers.
Targets (issue 14): p50 <= 2.0 s for a correct kernel and <= 1.0 s for a wrong one on a cache
miss; >= 1 correct submission/s with 2 workers.
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
    """A distinct text with the same kernel (a comment differs: every cache keyed by text misses)."""
    return f"{source}\n// benchmark variant {k}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="sum_dim")
    parser.add_argument("--steps", type=int, default=12, help="timed steps per measurement")
    parser.add_argument("--batch", type=int, default=64, help="submissions in the reward batch")
    parser.add_argument("--checker", default=None, help="a plain checker instead of the reward gate")
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("MUTAGYM_CACHE", tempfile.mkdtemp(prefix="mutagym-bench-env-"))

    import ray
    from mutagym.envs.judge import Judge
    from mutagym.envs.kernel_task import KernelTaskEnv
    from mutagym.envs.trainer import trl_reward
    from mutagym.substrates.catalog import load_problem

    console = Console()
    console.print(f"problem {args.problem}, checker {args.checker}, {args.steps} steps, batch {args.batch}, "
                  f"{args.num_cpus} CPUs, load average {os.getloadavg()[0]:.1f}, MUTAGYM_CACHE={os.environ['MUTAGYM_CACHE']}")
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    source = load_problem(args.problem).kernel_sources()["substrate"]

    judge = Judge(args.checker, backend="cpu", workers=args.num_cpus, secret=0)
    env = KernelTaskEnv(problems=[args.problem], judge=judge)
    env.reset(seed=0)
    t = time.perf_counter()
    _, reward, *_ , info = env.step(_variant(source, -1))
    first = time.perf_counter() - t
    assert reward == 1.0, info
    wrong = source.replace("out[row] = partial[0];", "out[row] = partial[0] * 1.001f;")
    assert wrong != source, "the wrong kernel is made from sum_dim's substrate: pass --problem sum_dim"

    def timed(texts, expected):
        out = []
        for text in texts:
            env.reset(seed=0)
            t = time.perf_counter()
            _, reward, *_, info = env.step(text)
            out.append(time.perf_counter() - t)
            assert reward == expected, info
        return out

    miss = timed([_variant(source, k) for k in range(args.steps)], 1.0)
    hit = timed([_variant(source, 0)] * args.steps, 1.0)
    wrong_miss = timed([_variant(wrong, k) for k in range(args.steps)], 0.0)
    env.close()

    rows = [("first step (cluster start, pool inputs made)", first, None, None)]
    for name, xs, target in (("env.step, correct, cache miss", miss, 2.0),
                             ("env.step, correct, cache hit", hit, 0.3),
                             ("env.step, wrong, cache miss", wrong_miss, 1.0)):
        p50 = statistics.median(xs)
        p90 = sorted(xs)[int(0.9 * (len(xs) - 1))]
        rows.append((name, p50, p90, target))
    table = Table(title=f"env.step latency, {args.problem}, judged by {judge.checker_id}")
    for col in ("measurement", "p50 s", "p90 s", "target s", "met"):
        table.add_column(col)
    for name, p50, p90, target in rows:
        table.add_row(name, f"{p50:.3f}", "" if p90 is None else f"{p90:.3f}",
                      "" if target is None else f"<= {target}", "" if target is None else
                      ("yes" if p50 <= target else "no"))
    console.print(table)

    prompts = [f"write {args.problem}"] * args.batch
    throughput = []
    for workers in (1, 2):
        reward_fn = trl_reward(args.checker, backend="cpu", workers=workers)
        warm = [f"```cuda\n{_variant(source, -2 - workers)}```"] * 2
        reward_fn(prompts[:2], warm, problem=[args.problem] * 2)     # warm: actors, pool inputs
        batch = [f"```cuda\n{_variant(source, 1000 * workers + k)}```" for k in range(args.batch)]
        t = time.perf_counter()
        rewards = reward_fn(prompts, batch, problem=[args.problem] * args.batch)
        seconds = time.perf_counter() - t
        reward_fn.close()
        assert rewards == [1.0] * args.batch, rewards
        throughput.append((workers, seconds, args.batch / seconds))
    table = Table(title=f"trl_reward, batch of {args.batch} distinct correct submissions, on Ray")
    for col in ("workers", "seconds", "submissions/s", "vs 1 worker"):
        table.add_column(col)
    for workers, seconds, rate in throughput:
        table.add_row(str(workers), f"{seconds:.2f}", f"{rate:.2f}", f"{rate / throughput[0][2]:.2f}x")
    console.print(table)
    ray.shutdown()


if __name__ == "__main__":
    main()
