"""The compile gate: a mutant enters the pool only if it compiles.

A mutant is `compilable` when NVRTC accepts it (the GPU's own compiler, no GPU needed) and the
CPU emulator builds it too; otherwise it is `uncompilable`, with the stage that rejected it
(`nvrtc` or `cpu`) and the first line of that compiler's message. A missing libnvrtc or g++ is
not the mutant's fault: `InfrastructureError` propagates.

>>> from mutagym.mutants.generate import mutants_for_source
>>> from mutagym.mutants.rule_schema import load_rules
>>> src = ('/* mutagym\\n[[launch]]\\nkernel = "k"\\ngrid = [1]\\nblock = [1]\\nargs = ["out"]\\n*/\\n'
...        'extern "C" __global__ void k(float* out) { out[0] = 2.0f * 3.0f; }\\n')
>>> rule = [r for r in load_rules() if r.id == "arith-mul-to-div"]
>>> mutants, _ = mutants_for_source("demo", src, rule)
>>> [(g.status, g.stage) for g in gate(mutants, cpu=False)]
[('compilable', None)]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .generate import Mutant

__all__ = ["GateResult", "gate", "gate_one"]


@dataclass(frozen=True)
class GateResult:
    """The compile gate's verdict on one mutant."""

    mutant_id: str
    status: Literal["compilable", "uncompilable", "quarantined"]
    stage: Literal["nvrtc", "cpu", "quarantine"] | None   # who rejected it; None when compilable
    error: str                              # first line of the compiler's message, "" if none


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def gate_one(mutant: Mutant, *, cpu: bool = True, arch: str = "compute_80") -> GateResult:
    """Compile *mutant* with NVRTC, then (with *cpu*) with the CPU emulator."""
    from ..runtime import compile as cpu_compile, parse_submission
    from ..runtime.errors import CompileError, SubmissionError
    from ..runtime.nvrtc import nvrtc_compile

    try:   # NVRTC compiles the device text, as for every submission (`runtime.nvrtc_gate`)
        device_text = parse_submission(mutant.source).device_text
    except SubmissionError as e:   # the source checks, which the CPU build would run first
        return GateResult(mutant.id, "uncompilable", "cpu", _first_line(e))
    try:
        nvrtc_compile(device_text, arch=arch, name=f"mutant-{mutant.id}.cu")
    except CompileError as e:
        return GateResult(mutant.id, "uncompilable", "nvrtc", _first_line(e))
    if cpu:
        try:
            cpu_compile(mutant.source, backend="cpu")
        except SubmissionError as e:  # CompileError and the submission checks
            return GateResult(mutant.id, "uncompilable", "cpu", _first_line(e))
    return GateResult(mutant.id, "compilable", None, "")


def gate(mutants: Iterable[Mutant], *, cpu: bool = True, arch: str = "compute_80",
         progress: bool = False, workers: int = 1) -> list[GateResult]:
    """The gate's verdict on each of *mutants*, in order (compilation is cached by source).

    With *workers* > 1 the mutants are compiled in that many spawned processes (about 0.2 s of
    NVRTC and 0.3 s of g++ per mutant here, so the whole catalog takes most of an hour on one core).
    """
    mutants = list(mutants)
    if workers <= 1 or len(mutants) <= 1:
        it = mutants
        if progress:
            from rich.progress import track

            it = track(mutants, description="compile gate")
        return [gate_one(m, cpu=cpu, arch=arch) for m in it]

    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    job = partial(gate_one, cpu=cpu, arch=arch)
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as ex:
        results = ex.map(job, mutants, chunksize=max(1, len(mutants) // (workers * 8)))
        if progress:
            from rich.progress import track

            results = track(results, total=len(mutants), description="compile gate")
        return list(results)
