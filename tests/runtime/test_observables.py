"""What a kernel can read where a GPU leaves the value to chance is drawn per case (issue 31 item
4): no fixed clock, shared-memory content or printf count tells the emulator from a GPU, so a
kernel cannot compute one thing here and another there (docs/emulator.md, "What a kernel can
observe"). The same case draws the same in any batch, so verdicts stay reproducible."""

from __future__ import annotations

import numpy as np

from mutagym.runtime import RunCase
from submission_text import compiled, launch, submission

OBSERVE = submission("""
    extern "C" __global__ void observe(const float* x, long long* out) {
        __shared__ unsigned words[64];
        long long first = clock64();
        long long second = clock64();
        long long third = clock();
        if (threadIdx.x == 0) {
            out[0] = first;
            out[1] = second - first;
            out[2] = third - second;
            out[3] = words[0];
            out[4] = words[37];
        }
    }
""", launch("observe", [1], [32], ["x", "out"]))


def _cases(n: int) -> list[RunCase]:
    return [RunCase({"x": np.full(4, k, np.float32)}, {"out": ((5,), "int64")}) for k in range(n)]


def _observe(cases: list[RunCase]) -> np.ndarray:
    results = compiled(OBSERVE, False).run_batch(cases)
    assert all(r.ok for r in results), [r.message for r in results]
    return np.stack([r.outputs["out"] for r in results])


def test_the_clock_starts_and_steps_by_a_draw_of_the_case():
    seen = _observe(_cases(12))
    starts, steps = seen[:, 0], seen[:, 1]
    assert np.all(seen[:, 1] > 0) and np.all(seen[:, 2] == seen[:, 1])     # monotonic, a step per call
    assert len(set(starts.tolist())) == 12 and len(set(steps.tolist())) > 3


def test_shared_memory_starts_with_a_poison_family_drawn_per_case():
    """All-ones bytes (NaN, -1), a large finite value of either sign or random bits: never one
    fixed pattern a kernel could test for."""
    words = _observe(_cases(24))[:, 3:]
    patterns = {int(w) for w in words[:, 0]}
    assert {0xFFFFFFFF, 0x7EFFFF7F, 0xFEFFFF7F} <= patterns and len(patterns) > 3
    random_bits = words[~np.isin(words[:, 0], [0xFFFFFFFF, 0x7EFFFF7F, 0xFEFFFF7F])]
    assert np.all(random_bits[:, 0] != random_bits[:, 1])       # random bits differ word to word


def test_a_case_draws_the_same_in_any_batch():
    cases = _cases(5)
    assert np.array_equal(_observe(cases)[2], _observe([cases[2]])[0])
    assert np.array_equal(_observe(cases[::-1])[0], _observe(cases)[4])


def test_printf_returns_the_number_of_arguments_as_cuda_does():
    """C's printf counts characters; CUDA's counts the arguments its format parsed."""
    k = compiled(submission("""
        extern "C" __global__ void k(int* out) {
            out[0] = printf("no arguments\\n");
            out[1] = printf("%d and %f, 100%%\\n", 3, 2.0);
            out[2] = printf("%*d|%.*f\\n", 5, 42, 2, 1.5);
        }
    """, launch("k", [1], [1], ["out"])), False)
    r = k.run({}, {"out": ((3,), "int32")}, {})
    assert r.ok and r.outputs["out"].tolist() == [0, 2, 4]
    assert r.stdout == "no arguments\n3 and 2.000000, 100%\n   42|1.50\n"
