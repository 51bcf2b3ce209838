"""Errors raised for bad submissions and bad launches.

A `SubmissionError` is the model's fault (malformed text, forbidden construct, launch plan that
disagrees with the kernel); it carries the line or the `args` entry at fault so a policy and a
person can both act on it. Infrastructure failures are never `SubmissionError`s.
"""

from __future__ import annotations


class SubmissionError(ValueError):
    """A submission cannot be compiled or launched; `str(err)` says what and where."""

    def __init__(self, message: str, *, line: int | None = None, where: str | None = None,
                 log: str = ""):
        self.reason = message
        self.line = line
        self.where = where
        self.log = log
        prefix = []
        if line is not None:
            prefix.append(f"line {line}")
        if where:
            prefix.append(where)
        super().__init__(f"{', '.join(prefix)}: {message}" if prefix else message)


class CompileError(SubmissionError):
    """The compiler (g++ for the CPU emulator, NVRTC for the GPU) rejected the source; `log` has its output."""


class LaunchError(SubmissionError):
    """The launch plan evaluates to something no GPU would launch (block too large, bad argument)."""


class InfrastructureError(RuntimeError):
    """mutagym itself failed (toolchain missing, worker died): not a judgement of the kernel."""
