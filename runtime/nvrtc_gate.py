"""The NVRTC compile gate, one function for every command that applies it (the environment's
judge, `mutagym eval` through it, `mutagym run`, the `cuda` backend): a text runs only if NVRTC
compiles it at the gate's architecture, and NVRTC instantiates what the launch block launches, so a
template body that fails for the launched arguments (a `static_assert` only that instantiation
trips) is a compile error here too, not a kernel that works in one command and fails in another.

NVRTC compiles the submission's device text (`Submission.device_text`), the very tokens the
emulator builds and the source checks read, never the raw text: a GPU runs what was judged."""

from __future__ import annotations

from .nvrtc import NvrtcResult, nvrtc_compile
from .submission import Submission, parse_submission


def nvrtc_gate(submission: Submission | str, *, arch: str = "compute_80") -> NvrtcResult:
    """NVRTC's result for *submission* (parsed here when a text) at *arch*, its launched kernels
    and bound constants lowered; SubmissionError (CompileError included) when it does not pass."""
    if isinstance(submission, str):
        submission = parse_submission(submission)
    return nvrtc_compile(submission.device_text, arch=arch, names=submission.symbols)
