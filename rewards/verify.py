"""Verify the catalog: every substrate and variant must match its fp64 reference on diverse inputs.

For each problem, every correct kernel runs on every shape preset crossed with the verification
generators (uniform, normal, sign-mixed, large-offset, perturbed affine parameters), against the
reference in float64 under the problem's own tolerance. The largest legitimate error is recorded:
it is what correct fp32 kernels really do, the floor any tighter tolerance must stay above.
A degenerate-problem screen flags problems that a checker could not referee under KernelBench's
uniform [0, 1) inputs: an output that is (near) constant, or one that ignores an input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..runtime import SubmissionError, compile
from ..substrates.catalog import Problem
from .generators import generate
from .judging import comparator_for
from .validity import check_validity

VERIFY_GENERATORS = ("uniform01", "normal", "sign_mixed", "large_offset", "affine_perturbed")


@dataclass
class KernelFailure:
    problem: str
    kernel: str
    input_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.problem}: kernel {self.kernel!r} fails input {self.input_id}: {self.detail}"


@dataclass
class ProblemVerification:
    """What `verify` found for one problem."""

    problem: str
    kernels: list[str]
    inputs: int
    runs: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    tolerance_used: float = 0.0        # worst |out - ref| / (atol + rtol |ref|) over passing runs
    failures: list[KernelFailure] = field(default_factory=list)
    degenerate: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


#: Fewest verification inputs per problem; more seeds are drawn until it is reached.
MIN_INPUTS = 20


def verification_inputs(problem: Problem, generators=VERIFY_GENERATORS, min_inputs: int = MIN_INPUTS):
    """Every shape preset x every generator, with as many seeds as it takes to reach `min_inputs`."""
    per_seed = len(problem.preset_names) * len(generators)
    seeds = range(-(-min_inputs // per_seed))
    return [generate(problem, g, preset=p, seed=s)
            for s in seeds for p in problem.preset_names for g in generators]


def verify_problem(problem: Problem, *, backend: str = "cpu", generators=VERIFY_GENERATORS,
                   schedules=("ascending",), timeout_s: float = 30.0) -> ProblemVerification:
    """Run every correct kernel of `problem` on the verification inputs (the validity gate's
    runs); collect every failure and the largest legitimate error."""
    inputs = verification_inputs(problem, generators)
    sources = problem.kernel_sources()
    report = ProblemVerification(problem.id, list(sources), len(inputs))
    kernels = {}
    for name, source in sources.items():
        try:
            kernels[name] = compile(source, backend=backend)
        except SubmissionError as err:
            report.failures.append(KernelFailure(problem.id, name, "(build)", str(err)))
    verdicts = check_validity(problem, inputs, backend=backend, schedules=schedules, timeout_s=timeout_s,
                              kernels=kernels)
    report.runs = len(kernels) * len(inputs) * len(schedules)
    for v in verdicts:
        for kernel, schedule, output, message in v.failures:
            tag = f"{v.id} ({schedule})" if len(schedules) > 1 else v.id
            detail = f"output {output!r}: {message}" if output else message
            report.failures.append(KernelFailure(problem.id, kernel, tag, detail))
        report.max_abs = max(report.max_abs, v.max_abs)
        report.max_rel = max(report.max_rel, v.max_rel)
        report.tolerance_used = max(report.tolerance_used, v.tolerance_used)
    report.degenerate = degenerate_reasons(problem)
    return report


def degenerate_reasons(problem: Problem, seed: int = 0) -> list[str]:
    """Why KernelBench-style uniform [0, 1) inputs cannot referee this problem (empty if they can).

    Flags: `OUT near-constant` (the output's mean passes the check), `OUT all-zeros passes`, and
    `ignores IN` (redrawing that input leaves the output within tolerance).
    """
    comparator = comparator_for(problem)
    base = generate(problem, "uniform01", seed=seed)
    scalars = problem.scalar_values()
    ref = problem.reference_outputs(base.inputs, scalars)
    reasons = []
    for name, values in ref.items():
        if values.size > 1 and comparator.compare(np.full_like(values, values.mean()), values).passed:
            reasons.append(f"{name} near-constant")
        if comparator.compare(np.zeros_like(values), values).passed:
            reasons.append(f"{name} all-zeros passes")
    other = generate(problem, "uniform01", seed=seed + 1)
    for spec in problem.spec.inputs:
        swapped = dict(base.inputs)
        swapped[spec.name] = other.inputs[spec.name]
        changed = problem.reference_outputs(swapped, scalars)
        if all(comparator.compare(changed[n], ref[n]).passed for n in ref):
            reasons.append(f"ignores {spec.name}")
    return reasons

