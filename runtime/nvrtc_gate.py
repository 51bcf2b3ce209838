"""The NVRTC compile gate, one function for every command that applies it (the environment's
judge, `mutagym eval` through it, `mutagym run`): a text runs only if NVRTC compiles it at the
gate's architecture, and NVRTC instantiates what the launch block launches, so a template body
that fails for the launched arguments (a `static_assert` only that instantiation trips) is a
compile error here too, not a kernel that works in one command and fails in another."""

from __future__ import annotations

from .nvrtc import NvrtcResult, nvrtc_compile
from .submission import parse_submission


def nvrtc_gate(source: str) -> NvrtcResult:
    """NVRTC's result for *source* with its launched kernels and bound constants lowered;
    SubmissionError (CompileError included) when the text does not pass."""
    return nvrtc_compile(source, names=parse_submission(source).symbols)
