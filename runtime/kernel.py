"""The runtime's public face: compile a submission once, run it on many input sets.

`compile` parses and statically checks the text, then builds it for a backend: `cpu` (the
sandboxed emulator, always available) or `cuda` (CuPy on a GPU). `auto` picks `cuda` when a GPU
is present. Both backends take the same launch plan and report the same outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .cases import RunCase
from .results import RunResult
from .submission import Submission, parse_submission

BACKENDS = ("auto", "cpu", "cuda")


class Kernel:
    """A compiled submission. `run` runs one input set; `run_batch` many, in one sandboxed child."""

    def __init__(self, submission: Submission, backend: str, impl):
        self.submission = submission
        self.backend = backend
        self._impl = impl

    def run(self, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, tuple[tuple[int, ...], str]],
            dims: Mapping[str, int], scalars: Mapping[str, float] | None = None,
            schedule: str = "ascending", timeout_s: float = 10.0) -> RunResult:
        """Run the launch plan once; outputs maps each output name to (shape, dtype name)."""
        case = RunCase(dict(inputs), dict(outputs), dict(dims), dict(scalars or {}))
        return self.run_batch([case], schedule=schedule, timeout_s=timeout_s)[0]

    def run_batch(self, cases: Sequence[RunCase], *, schedule: str = "ascending",
                  timeout_s: float = 10.0) -> list[RunResult]:
        """Run every case; `timeout_s` applies to each case without a `RunCase.timeout_s` of its
        own. One result per case, in order."""
        if not cases:
            return []
        return self._impl.run_batch(list(cases), schedule=schedule, timeout_s=timeout_s)

    def run_schedules(self, cases: Sequence[RunCase], schedules: Sequence[str], *,
                      timeout_s: float = 10.0) -> dict[str, list[RunResult]]:
        """`run_batch` under each of `schedules` (schedule -> results); the CPU backend lays the
        buffers out and copies the inputs once for all of them."""
        if not cases:
            return {s: [] for s in schedules}
        run = getattr(self._impl, "run_schedules", None)
        if run is None:
            return {s: self._impl.run_batch(list(cases), schedule=s, timeout_s=timeout_s) for s in schedules}
        return run(list(cases), schedules, timeout_s=timeout_s)

    def __repr__(self) -> str:
        kernels = ", ".join(sorted({l.kernel for l in self.submission.launches}))
        return f"Kernel({kernels}; backend={self.backend!r}; sha256={self.submission.sha256[:12]})"


def compile(source: str | bytes, *, backend: str = "auto",  # noqa: A001 (the API's name)
            race_check: bool | None = None) -> Kernel:
    """Parse, check and build a submission; raises `SubmissionError` for a bad one.

    `backend="cpu"` forces the emulator; `"cuda"` requires a GPU; `"auto"` uses the GPU if present.
    *race_check*: the emulator's race and state checks (default `MUTAGYM_RACE_CHECK`, on; see
    `mutagym.runtime.races`); a GPU has none.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    submission = parse_submission(source)
    if backend == "auto":
        from .cuda_backend import cuda_available
        backend = "cuda" if cuda_available() else "cpu"
    if backend == "cuda":
        from .cuda_backend import CudaKernel
        return Kernel(submission, "cuda", CudaKernel(submission))
    from .cpu_backend import CpuKernel
    return Kernel(submission, "cpu", CpuKernel(submission, race_check=race_check))
