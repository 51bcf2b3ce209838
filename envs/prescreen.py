"""Ray workers that judge submitted kernels: the prescreen against the pool of record, and the
batched checker runs of trainer reward functions.

`JudgePool` starts lazily, on the first submission, a pool of Ray actors on a local cluster (or
on the cluster `address` / `RAY_ADDRESS` names). Each actor keeps an `InputCache`, so a pool's
inputs and fp64 references are made once per actor, not once per kernel. Work goes to the actor
with the fewest calls in flight.

Failures stay apart:
* a kernel fault is never a worker failure: the runtime sandboxes it into an outcome;
* an actor process that dies is restarted by Ray and the call it was running is retried on the
  fresh process (`max_restarts`, `max_task_retries`), so a step still gets its result;
* a call that does not finish within `timeout_s` comes back as `WorkTimeout`, and anything else
  that went wrong as `WorkFailed` (with the cause's text): never an exception out of `gather`.
On a cluster with GPUs there is one actor per GPU, running the `cuda` backend.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..mutants.ray_pool import RayPool
from ..rewards.checker import CheckerVersion, InputRef, Verdict, evaluate_source_schedules
from ..rewards.envelope import EnvelopeSet
from ..rewards.falsify import SearchPlan, search_source

__all__ = ["JudgePool", "WorkFailed", "WorkTimeout"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class WorkTimeout:
    """The call did not finish within the pool's per-kernel timeout."""

    seconds: float


@dataclass(frozen=True)
class WorkFailed:
    """The call could not be completed (its worker kept dying, or the cluster is gone)."""

    message: str


class _Worker:
    """One actor: judges sources with a warm input cache (runs inside a Ray worker process)."""

    def __init__(self, backend: str):
        from ..rewards.input_cache import InputCache
        self.backend = backend
        self.cache = InputCache()

    def pid(self) -> int:
        return os.getpid()

    def evaluate(self, checker: CheckerVersion, problem: str, source: str, schedules: tuple[str, ...],
                 suite: list[InputRef] | None, run_timeout_s: float, envelopes: EnvelopeSet | None = None,
                 search: SearchPlan | None = None) -> Verdict | dict[str, Verdict]:
        """One verdict for one schedule (a string); a verdict per schedule for a tuple of them.
        With a `search` plan, the falsification search from `suite` instead (`rewards.falsify`)."""
        if search is not None:
            return search_source(checker, problem, source, suite, search, schedules=schedules,
                                 rule=envelopes.rule, backend=self.backend, cache=self.cache,
                                 timeout_s=run_timeout_s)
        verdicts = evaluate_source_schedules(checker, problem, source, (schedules,) if isinstance(schedules, str)
                                             else schedules, backend=self.backend, timeout_s=run_timeout_s,
                                             suite=suite, cache=self.cache, envelopes=envelopes)
        return verdicts[schedules] if isinstance(schedules, str) else verdicts


class JudgePool:
    """A lazily started pool of judging actors.

    Arguments:
        workers: number of actors; default: the cluster's CPUs (GPUs, when it has any).
        address: cluster to attach to; default `RAY_ADDRESS`, else a new local cluster.
        num_cpus: CPUs of a local cluster (default: all of this machine's).
        timeout_s: how long `gather` waits for one call before it reports `WorkTimeout`.
        run_timeout_s: the runtime's timeout for each input run inside a call.
        max_restarts: how many times a dead actor is restarted (its call retried each time).
    """

    def __init__(self, *, workers: int | None = None, address: str | None = None,
                 num_cpus: int | None = None, timeout_s: float = 300.0, run_timeout_s: float = 30.0,
                 max_restarts: int = 3):
        if workers is not None and workers < 1:
            raise ValueError(f"JudgePool(workers={workers!r}): must be >= 1")
        self.workers, self.address, self.num_cpus = workers, address, num_cpus
        self.timeout_s, self.run_timeout_s, self.max_restarts = timeout_s, run_timeout_s, max_restarts
        self._cluster: RayPool | None = None
        self._actors: list = []
        self._in_flight: dict = {}
        self._lock = threading.Lock()
        self.backend = "cpu"

    # ------------------------------------------------------------------ lifecycle
    def _start(self) -> None:
        with self._lock:
            if not self._actors:
                self._start_locked()

    def _start_locked(self) -> None:
        import ray
        self._cluster = RayPool(address=self.address, num_cpus=self.num_cpus, progress=False).__enter__()
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        self.backend = "cuda" if gpus else "cpu"
        count = self.workers or max(1, gpus or int(resources.get("CPU", 1)))
        # Actors reserve no CPU: two pools in one process (a second reward function, a trainer's
        # own Ray cluster) must never starve each other waiting for CPUs an idle actor holds.
        # On GPUs an actor asks for a quarter of one (its device), for the same reason.
        options = {"num_cpus": 0, "num_gpus": 0.25 if gpus else 0,
                   "max_restarts": self.max_restarts, "max_task_retries": self.max_restarts}
        actor_class = ray.remote(_Worker)
        self._actors = [actor_class.options(**options).remote(self.backend) for _ in range(count)]
        self._in_flight = {i: 0 for i in range(count)}

    def close(self) -> None:
        """Stop the actors, and the cluster if this pool started it."""
        if self._actors:
            import ray
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
            self._actors = []
        if self._cluster is not None:
            self._cluster.__exit__(None, None, None)
            self._cluster = None

    def __enter__(self) -> "JudgePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def started(self) -> bool:
        return bool(self._actors)

    def actor_pids(self) -> list[int]:
        """Process ids of the actors (starts the pool); operations and tests use them."""
        import ray
        self._start()
        return ray.get([a.pid.remote() for a in self._actors])

    # ------------------------------------------------------------------ work
    def submit(self, checker: CheckerVersion, problem: str, source: str, *,
               schedule: str | tuple[str, ...] = "ascending", suite: Sequence[InputRef] | None = None,
               envelopes: EnvelopeSet | None = None, search: SearchPlan | None = None):
        """Queue one evaluation on the least busy actor; returns a handle for `gather`, which gives
        a `Verdict` for one schedule, or a dict of them when *schedule* is a tuple of schedules.
        With `envelopes`, the inputs that have one are judged against it too; with `search`, the
        call is that falsification search (from `suite`, under the tuple of orders *schedule*)."""
        self._start()
        k = min(self._in_flight, key=lambda i: (self._in_flight[i], i))
        self._in_flight[k] += 1
        ref = self._actors[k].evaluate.remote(checker, problem, source, schedule,
                                              list(suite) if suite is not None else None, self.run_timeout_s,
                                              envelopes, search)
        return (k, ref)

    def gather(self, handles: Sequence) -> list[Verdict | WorkTimeout | WorkFailed]:
        """Each handle's `Verdict`, or what kept it from one; waits at most `timeout_s` per call.

        An actor runs its calls one after another, so a call's wait counts from when its actor was
        free to start it (its previous call in *handles* ended, or `gather` began): a long batch
        queued on few actors is not cut short, and a call that hangs still gives up in time."""
        import ray
        from ray.exceptions import GetTimeoutError, RayError

        started = time.monotonic()
        actor_free_at: dict[int, float] = {}
        results: list[Verdict | WorkTimeout | WorkFailed] = []
        for k, ref in handles:
            deadline = actor_free_at.get(k, started) + self.timeout_s
            try:
                results.append(ray.get(ref, timeout=max(0.0, deadline - time.monotonic())))
            except GetTimeoutError:
                results.append(WorkTimeout(self.timeout_s))
            except RayError as err:
                text = " ".join(_ANSI.sub("", str(err)).split())[:300]
                results.append(WorkFailed(f"{type(err).__name__}: {text}"))
            finally:
                self._in_flight[k] -= 1
                actor_free_at[k] = time.monotonic()
        return results
