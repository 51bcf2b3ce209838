"""A launch block cannot exhaust the judge: its memory is bounded before anything is allocated.

Two budgets (runtime/plan.py, runtime/cpu_backend.py): the scratch buffers of one case together
(`plan.scratch_budget`, the larger of 64 MiB and 8x the case's inputs and outputs), and the judge's
memory for one batch's device memory (`MUTAGYM_BATCH_BYTES`, `buffers.judge_bytes`): a larger batch
runs in several runners one after the other, and a case whose scratch alone takes it past the
budget is the kernel's `launch_error`. Both are decided from the plans, so the refused launch
blocks here cost nothing to refuse.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import mutagym.runtime.cpu_backend as cpu_backend
from mutagym.runtime import LaunchError, RunCase
from mutagym.runtime.plan import MIN_SCRATCH_BUDGET
from submission_text import compiled, launch, scratch, submission

N = 1000
CASE = RunCase({"x": np.arange(N, dtype=np.float32)}, {"out": ((N,), "float32")}, {"n": N})
ONE_D = launch("k", ["ceil_div(n, 128)"], [128], ["x", "tmp", "out", "n"])
COPY_THROUGH_SCRATCH = ('extern "C" __global__ void k(const float* x, float* tmp, float* out, int n) {\n'
                        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                        "    if (i < n) { tmp[i] = x[i]; out[i] = tmp[i]; }\n}\n")


def with_scratch(*sizes: str) -> str:
    """The copy kernel with scratch buffers of *sizes* (float32 elements), the first one `tmp`."""
    names = ["tmp", *(f"extra{j}" for j in range(1, len(sizes)))]
    return submission(COPY_THROUGH_SCRATCH, ONE_D, scratches=tuple(scratch(n, "float32", s) for n, s in zip(names, sizes)))


def runners_started(monkeypatch) -> list:
    """The runner children each batch starts, recorded as they are started."""
    started = []
    real = cpu_backend.start_runner

    def start(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(cpu_backend, "start_runner", start)
    return started


class TestScratchBudget:
    def test_two_scratch_buffers_of_4_gib_are_a_launch_error(self):
        """Each buffer is within the per-buffer cap, together they are 8 GiB for a case of 8 KB: the
        kernel's LaunchError naming the scratch budget, raised before any memory is touched (before,
        the judge failed with ENOMEM, an infra_error)."""
        k = compiled(with_scratch("1073741824", "1073741824"))
        with pytest.raises(LaunchError, match=r"the scratch buffers take 8,589,934,592 bytes together .*the "
                                              r"scratch budget of a case whose inputs and outputs take 8,000 "
                                              r"bytes is 67,108,864 bytes"):
            k.run_batch([CASE])

    def test_scratch_up_to_the_budget_runs(self):
        """Scratch of exactly the budget is allowed, and the kernel runs."""
        k = compiled(with_scratch(str(MIN_SCRATCH_BUDGET // 4)))
        r = k.run_batch([CASE])[0]
        assert r.ok, r.message
        np.testing.assert_array_equal(r.outputs["out"], CASE.inputs["x"])


class TestJudgeMemoryBudget:
    def test_a_batch_over_the_budget_runs_in_several_runners(self, monkeypatch):
        """Eight cases of 4 MiB of scratch each, under a budget of 80 MiB, run in four runners of two
        cases each (a case costs the judge 36 MiB: its memfd, the copy kept for resetting it, the
        poison's draw and the race check's shadow), every result right."""
        monkeypatch.setenv("MUTAGYM_BATCH_BYTES", str(80 << 20))
        k = compiled(with_scratch("1048576"))
        started = runners_started(monkeypatch)
        results = k.run_batch([CASE] * 8)
        assert [r.outcome for r in results] == ["ok"] * 8
        assert len(started) == 4, len(started)

    def test_a_case_whose_scratch_passes_the_budget_is_a_launch_error(self, monkeypatch):
        """A case whose inputs and outputs fit the judge's budget and whose scratch (within the
        scratch budget) does not: the kernel's LaunchError naming the judge's budget."""
        monkeypatch.setenv("MUTAGYM_BATCH_BYTES", str(32 << 20))
        k = compiled(with_scratch("1048576"))
        with pytest.raises(LaunchError, match=r"the judge's memory budget for one evaluation is 33,554,432 "
                                              r"bytes \(MUTAGYM_BATCH_BYTES\)"):
            k.run_batch([CASE])

    def test_a_case_whose_own_data_passes_the_budget_runs_alone(self, monkeypatch):
        """Inputs and outputs are the judge's choice: a case over the budget on them alone still runs."""
        monkeypatch.setenv("MUTAGYM_BATCH_BYTES", str(1 << 12))
        k = compiled(with_scratch("n"))
        started = runners_started(monkeypatch)
        results = k.run_batch([CASE] * 2)
        assert [r.outcome for r in results] == ["ok"] * 2 and len(started) == 2
