"""Environment latency and reward throughput: `env.step` with the prescreen, and a trainer's batch.

    python benchmarks/bench_env.py --problem sum_dim --steps 12 --batch 64

Measures, in one run on one local Ray cluster (2 CPUs by default):
* `env.step` latency for a reduction kernel, prescreen included: cache miss (every step a new
  text, so NVRTC, g++ and every run are cold for it) and cache hit (the same text again);
  the first step (cluster start, the pool's inputs and references made) is reported apart;
* reward throughput of a batch of `--batch` distinct submissions through `trl_reward` (TRL's
  GRPOTrainer signature; checker and prescreen on the Ray workers) with 1 and with 2 workers.
Targets (issue 7): p50 <= 1.5 s cache miss, <= 0.3 s cache hit; throughput scales with workers.
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
    parser.add_argument("--checker", default="default")
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("MUTAGYM_CACHE", tempfile.mkdtemp(prefix="mutagym-bench-env-"))

    import ray
    from mutagym.envs.judge import Judge
    from mutagym.envs.kernel_task import KernelTaskEnv
    from mutagym.rewards.trainer import trl_reward
    from mutagym.substrates.catalog import load_problem

    console = Console()
    console.print(f"problem {args.problem}, checker {args.checker}, {args.steps} steps, batch {args.batch}, "
                  f"{args.num_cpus} CPUs, load average {os.getloadavg()[0]:.1f}, MUTAGYM_CACHE={os.environ['MUTAGYM_CACHE']}")
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    source = load_problem(args.problem).kernel_sources()["substrate"]

    judge = Judge(args.checker, backend="cpu", workers=args.num_cpus)
    env = KernelTaskEnv(problems=[args.problem], judge=judge)
    env.reset(seed=0)
    t = time.perf_counter()
    _, reward, *_ , info = env.step(_variant(source, -1))
    first = time.perf_counter() - t
    assert reward == 1.0 and info["prescreen"]["status"] == "ok", info
    pool_size = info["prescreen"]["pool_size"]

    def timed(texts):
        out = []
        for text in texts:
            env.reset(seed=0)
            t = time.perf_counter()
            _, reward, *_, info = env.step(text)
            out.append(time.perf_counter() - t)
            assert reward == 1.0 and info["prescreen"]["pool_accepted"], info
        return out

    miss = timed([_variant(source, k) for k in range(args.steps)])
    hit = timed([_variant(source, 0)] * args.steps)
    env.close()

    rows = [("first step (cluster start, pool inputs made)", first, None, None)]
    for name, xs, target in (("env.step, cache miss", miss, 1.5), ("env.step, cache hit", hit, 0.3)):
        p50 = statistics.median(xs)
        p90 = sorted(xs)[int(0.9 * (len(xs) - 1))]
        rows.append((name, p50, p90, target))
    table = Table(title=f"env.step latency, {args.problem}, pool of record {pool_size} inputs x 2 schedules")
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
    table = Table(title=f"trl_reward, batch of {args.batch} distinct submissions, checker + prescreen on Ray")
    for col in ("workers", "seconds", "submissions/s", "vs 1 worker"):
        table.add_column(col)
    for workers, seconds, rate in throughput:
        table.add_row(str(workers), f"{seconds:.2f}", f"{rate:.2f}", f"{rate / throughput[0][2]:.2f}x")
    console.print(table)
    ray.shutdown()


if __name__ == "__main__":
    main()
