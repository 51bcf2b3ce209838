"""Ray plumbing for the kill matrix: start or attach to a cluster, run tasks, show progress.

`RayPool` is one class with few verbs. As a context manager it starts a local cluster
(`ray.init(num_cpus=...)`) or attaches to an existing one (`address=`, else the `RAY_ADDRESS`
environment variable), and shuts down only a cluster it started itself; a Ray already initialised
in this process is reused as it is. `map_unordered` runs one task per payload and yields results
as they finish.

Failures are kept apart by kind (the same split as `ray.exceptions`):

* a kernel fault is never a task failure: the runtime sandboxes it and the task returns it as a
  cell outcome;
* a worker process that dies (killed, out of memory, a node lost) is *system* failure: Ray retries
  the task up to `max_retries` times on a fresh worker, and nothing the task had done is kept, so
  nothing is lost or counted twice. If every retry dies, `WorkerLostError` names the task and
  points at Ray's worker logs;
* an exception raised by the task's own code (a missing compiler, a bug) is *user* failure and is
  not retried: `TaskFailedError` names the task, the worker's pid and ip, and carries the cause.

>>> def square(x):
...     return x * x
>>> with RayPool(num_cpus=1, progress=False) as pool:            # doctest: +SKIP
...     sorted(r for _, r in pool.map_unordered(square, [1, 2, 3]))
[1, 4, 9]
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["RAY_LOGS", "RayPool", "TaskFailedError", "WorkerLostError", "worker_label"]

#: Where a local Ray cluster writes the logs of its worker processes.
RAY_LOGS = "/tmp/ray/session_latest/logs"
#: Tasks submitted ahead per CPU of the cluster (see `RayPool.map_unordered`).
IN_FLIGHT_PER_CPU = 4


class TaskFailedError(RuntimeError):
    """A task's own code raised (not a kernel fault, not a dead worker); it is not retried."""

    def __init__(self, label: str, worker: str, cause: BaseException):
        self.label, self.worker, self.cause = label, worker, cause
        super().__init__(f"task {label} failed on worker {worker}: {type(cause).__name__}: {cause}")


class WorkerLostError(RuntimeError):
    """Every try of a task lost its worker process (killed, out of memory, node gone)."""

    def __init__(self, label: str, tries: int, cause: BaseException):
        self.label, self.tries, self.cause = label, tries, cause
        detail = " ".join(str(cause).split())[:400]
        super().__init__(f"task {label}: its worker died on all {tries} tries ({type(cause).__name__}: "
                         f"{detail}); completed tasks are stored, rerun to resume. Worker logs: "
                         f"{RAY_LOGS} (worker-*.err), or `ray logs` on an attached cluster")


class _Raised:
    """What `_guarded` returns when the task's code raised: the exception and where."""

    def __init__(self, worker: str, exc: BaseException, traceback_text: str):
        self.worker, self.exc, self.traceback_text = worker, exc, traceback_text


def _guarded(fn, payload, *shared):
    """Run `fn(payload, *shared)` on a worker; an exception comes back as `_Raised` (user failure),
    so only a dying worker is left to Ray's retries (system failure)."""
    try:
        return fn(payload, *shared)
    except Exception as exc:  # noqa: BLE001 - reported to the driver with the worker's identity
        import pickle
        import traceback
        try:
            pickle.dumps(exc)
        except Exception:  # an exception that cannot travel becomes its text
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        return _Raised(worker_label(), exc, traceback.format_exc())


def _token_auth_if_available() -> None:
    """Clusters made by `ray start` require Ray's token authentication, which a client only uses
    when `RAY_AUTH_MODE=token`; turn it on when a token is at hand and the user said nothing."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    token_file = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.expanduser("~/.ray/auth_token")
    if os.environ.get("RAY_AUTH_TOKEN") or os.path.isfile(token_file):
        os.environ["RAY_AUTH_MODE"] = "token"


def worker_label() -> str:
    """`pid N on HOST` for the current process (what results and errors name).

    >>> worker_label().startswith(f"pid {os.getpid()} on ")
    True
    """
    import socket
    return f"pid {os.getpid()} on {socket.gethostname()}"


class RayPool:
    """Run independent tasks on a Ray cluster with retries and a progress bar.

    Arguments:
        address: a cluster to attach to (`"auto"`, `"ray://..."`, `"host:port"`); default: the
            `RAY_ADDRESS` environment variable, else a new local cluster.
        num_cpus: CPUs of a local cluster (ignored when attaching); default: all.
        max_retries: how many times a task whose worker died is run again.
        progress: show a rich progress bar (cells, cells/s, ETA).
        description: the progress bar's label.
    """

    def __init__(self, *, address: str | None = None, num_cpus: int | None = None,
                 max_retries: int = 3, progress: bool = True, description: str = "tasks"):
        if max_retries < 0:
            raise ValueError(f"RayPool(max_retries={max_retries!r}): must be >= 0")
        if num_cpus is not None and num_cpus < 1:
            raise ValueError(f"RayPool(num_cpus={num_cpus!r}): must be >= 1")
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.progress = progress
        self.description = description
        self._started = False
        self.elapsed_s = 0.0

    # ------------------------------------------------------------------ cluster
    def __enter__(self) -> "RayPool":
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if self.address:
            _token_auth_if_available()   # before Ray reads its configuration
        import ray

        if ray.is_initialized():
            return self
        if self.address:
            ray.init(address=self.address, log_to_driver=False)
        else:
            # "local": always a new cluster, never one that `ray start` left in /tmp/ray
            ray.init(address="local", num_cpus=self.num_cpus, include_dashboard=False,
                     log_to_driver=False)
        self._started = True
        return self

    def __exit__(self, *exc) -> None:
        import ray

        if self._started:
            ray.shutdown()
            self._started = False

    @property
    def cluster_cpus(self) -> float:
        """CPUs the connected cluster offers."""
        import ray
        return float(ray.cluster_resources().get("CPU", 0))

    # ------------------------------------------------------------------ tasks
    def map_unordered(self, fn: Callable[..., Any], payloads: Sequence[Any], *,
                      shared: Sequence[Any] = (), weights: Sequence[int] | None = None,
                      labels: Sequence[str] | None = None) -> Iterator[tuple[int, Any]]:
        """Run `fn(payload, *shared)` for each payload; yield `(index, result)` as tasks finish.

        Unordered: results come in completion order, each with its payload's index. `shared`
        values are put in the object store once and passed to every task. `weights` (cells per
        task) drive the progress bar; `labels` name tasks in errors. Consume the iterator fully:
        leaving it early cancels nothing that is already running.

        Raises `TaskFailedError` when a task's code raises and `WorkerLostError` when a task's
        worker died on every try. A failure does not stop the other tasks: every task that
        succeeds is yielded first, then the first failure is raised (the rest in its `.others`).

        Tasks start in payload order, a few per CPU of the cluster in flight at a time: workers
        never wait, and the driver never waits on thousands of handles at once (one `ray.wait`
        over every pending task made the driver's own work grow with the square of their number).
        """
        import ray
        from ray.exceptions import RayTaskError, WorkerCrashedError, NodeDiedError

        if not ray.is_initialized():
            raise RuntimeError("RayPool.map_unordered called outside `with RayPool(...)`")
        n = len(payloads)
        weights = list(weights) if weights is not None else [1] * n
        labels = list(labels) if labels is not None else [f"#{i}" for i in range(n)]
        if len(weights) != n or len(labels) != n:
            raise ValueError(f"RayPool.map_unordered: {n} payloads but {len(weights)} weights and "
                             f"{len(labels)} labels")
        remote = ray.remote(_guarded)
        options = dict(max_retries=self.max_retries, num_cpus=1, retry_exceptions=False)
        shared_refs = [ray.put(s) for s in shared]
        fn_ref = ray.put(fn)
        window = max(4, IN_FLIGHT_PER_CPU * int(self.cluster_cpus))
        pending: dict = {}
        submitted = 0

        def submit_more() -> None:
            nonlocal submitted
            while submitted < n and len(pending) < window:
                i = submitted
                ref = remote.options(name=labels[i][:200], **options).remote(fn_ref, payloads[i], *shared_refs)
                pending[ref] = i
                submitted += 1

        start = time.perf_counter()
        failures: list[Exception] = []
        with _Progress(self.progress, self.description, sum(weights)) as bar:
            submit_more()
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                ref = done[0]
                i = pending.pop(ref)
                submit_more()
                # A failed task does not stop the others: they finish and are yielded (stored by
                # the caller), and the first failure is raised once nothing is left running.
                try:
                    result = ray.get(ref)
                except RayTaskError as err:   # raised outside `_guarded` (e.g. arguments failed)
                    worker = f"pid {getattr(err, 'pid', '?')} on {getattr(err, 'ip', '?')}"
                    failures.append(TaskFailedError(labels[i], worker, getattr(err, "cause", None) or err))
                    continue
                except (WorkerCrashedError, NodeDiedError) as err:
                    failures.append(WorkerLostError(labels[i], self.max_retries + 1, err))
                    continue
                if isinstance(result, _Raised):
                    failure = TaskFailedError(labels[i], result.worker, result.exc)
                    failure.traceback_text = result.traceback_text
                    failures.append(failure)
                    continue
                bar.advance(weights[i])
                yield i, result
        self.elapsed_s = time.perf_counter() - start
        if failures:
            first = failures[0]
            first.others = failures[1:]
            if len(failures) > 1:
                first.args = (f"{first.args[0]} (and {len(failures) - 1} more failed task(s); "
                              f"see .others)",)
            raise first


class _Progress:
    """A rich progress bar of cells with cells/s and ETA (a no-op when disabled)."""

    def __init__(self, enabled: bool, description: str, total: int):
        self.enabled, self.description, self.total = enabled, description, total
        self.done = 0
        self.start = time.perf_counter()

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeRemainingColumn)
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("cells"), TextColumn("{task.fields[rate]}"),
                                TextColumn("ETA"), TimeRemainingColumn())
            self.bar.__enter__()
            self.task = self.bar.add_task(self.description, total=self.total, rate="- cells/s")
        return self

    def advance(self, n: int) -> None:
        self.done += n
        if self.enabled:
            rate = self.done / max(time.perf_counter() - self.start, 1e-9)
            self.bar.update(self.task, advance=n, rate=f"{rate:.1f} cells/s")

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.__exit__(*exc)
