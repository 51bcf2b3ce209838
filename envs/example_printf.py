"""Device `printf` output for multi-turn feedback, taken from the public example input only.

A kernel's printf output is what a person debugging it reads, so a policy gets it too, but never
from a hidden input: a kernel that prints its inputs would hand the policy the hidden suite, which
is fixed, and let it special-case them. So the kernel runs once more, on the input `mutagym run`
uses by default (the official shape, normal values, seed 0, ascending order), which anyone can
generate, and the feedback shows what it printed there.
"""

from __future__ import annotations

from ..rewards.generators import NotApplicable, generate
from ..rewards.judging import comparator_for, judge_kernel
from ..runtime import InfrastructureError, SubmissionError, compile
from ..substrates.catalog import load_problem

#: The most printf output shown in one feedback (the runner keeps at most 64 KiB per case).
PRINTF_FEEDBACK_CHARS = 1000
#: The public example input: what `mutagym run KERNEL --problem ID` runs by default.
EXAMPLE = {"generator": "normal", "preset": "official", "seed": 0, "schedule": "ascending"}


def example_printf(source: str, problem_id: str, backend: str) -> str:
    """What *source* prints on the public example input of *problem_id*, at most
    `PRINTF_FEEDBACK_CHARS`; empty when it calls no printf or cannot run there."""
    if "printf" not in source:
        return ""
    problem = load_problem(problem_id)
    try:
        kernel = compile(source, backend=backend)
        example = generate(problem, EXAMPLE["generator"], preset=EXAMPLE["preset"], seed=EXAMPLE["seed"])
        [case] = judge_kernel(kernel, problem, [example], comparator_for(problem), (EXAMPLE["schedule"],),
                              timeout_s=10.0)[EXAMPLE["schedule"]]
    except (SubmissionError, InfrastructureError, NotApplicable):
        return ""
    return case.stdout[:PRINTF_FEEDBACK_CHARS]
