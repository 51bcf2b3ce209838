"""The portable fiber fallback (ucontext + _setjmp/_longjmp) agrees with the hand-written switch.

Platforms other than x86-64 and aarch64 build the runner with MG_UCONTEXT; here the fallback is
forced on x86-64 so that it is exercised, sandbox included (it must make no system call once
seccomp is on, which a plain swapcontext would).
"""

import subprocess

import numpy as np
import pytest

from mutagym.rewards.generators import generate
from mutagym.runtime import RunCase, parse_submission
from mutagym.runtime.cpu_backend import CpuKernel
from mutagym.runtime.toolchain import CSRC, RUNNER_FLAGS, compiler
from mutagym.substrates.catalog import load_problem


@pytest.fixture(scope="module")
def ucontext_runner(tmp_path_factory):
    path = tmp_path_factory.mktemp("runner") / "mg_runner_ucontext"
    subprocess.run([compiler(), *RUNNER_FLAGS, "-DMG_UCONTEXT", "-o", str(path), str(CSRC / "runner.cpp"),
                    "-ldl", "-lm"], check=True)
    return path


@pytest.mark.parametrize("problem_id", ["softmax", "layernorm", "cumsum", "matvec"])
def test_ucontext_fallback_matches_the_assembly_switch(problem_id, ucontext_runner):
    problem = load_problem(problem_id)
    inputs = [generate(problem, "normal", preset=p) for p in problem.preset_names]
    cases = [RunCase(g.inputs, problem.output_specs(g.dims), g.dims, problem.scalar_values()) for g in inputs]
    for name, source in problem.kernel_sources().items():
        kernel = CpuKernel(parse_submission(source))
        expected = kernel.run_batch(cases, schedule="shuffled:2")
        kernel.runner = ucontext_runner
        got = kernel.run_batch(cases, schedule="shuffled:2")
        for e, g in zip(expected, got):
            assert g.outcome == "ok", f"{name}: {g.outcome} {g.message}"
            for out in e.outputs:
                np.testing.assert_array_equal(g.outputs[out], e.outputs[out], err_msg=name)
