"""Compile and run CUDA C kernels: the CPU emulator by default, CuPy on a GPU.

>>> from mutagym.runtime import compile
>>> kernel = compile(source)                       # doctest: +SKIP
>>> result = kernel.run({"x": x}, {"out": ((n,), "float32")}, {"n": n})   # doctest: +SKIP
"""

from .cases import RunCase
from .errors import CompileError, InfrastructureError, LaunchError, SubmissionError
from .kernel import BACKENDS, Kernel, compile
from .results import OUTCOMES, RunResult
from .submission import Submission, parse_submission

__all__ = [
    "BACKENDS", "OUTCOMES", "CompileError", "InfrastructureError", "Kernel", "LaunchError",
    "RunCase", "RunResult", "Submission", "SubmissionError", "compile", "parse_submission",
]
