"""Thread schedules: the order in which the emulator runs a block's threads decides which races show.

Threads of a block run one at a time until they return or reach a barrier (see the module
docstring of `mutagym.runtime.cpu_backend`). A kernel that is missing a barrier can be wrong under
one order and right under another, which is why a kill matrix runs more than one schedule; a
correct kernel is right under all of them; and a seeded shuffle is a pure function of its seed.
What orders alone show is the subject here, so kernels are built without the race detector, which
reports these races as `data_race` under every order (test_races.py).
"""

from __future__ import annotations


import numpy as np
import pytest

from mutagym.runtime import RunCase
from mutagym.runtime.buffers import initial_output
from submission_text import compiled, submission

SCHEDULES = ("ascending", "descending", "shuffled:1", "shuffled:2")




TREE_REDUCTION = """
    extern "C" __global__ void block_sum(const float* x, float* out, int n) {
        __shared__ float s[256];
        int t = threadIdx.x, i = blockIdx.x * 256 + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t == 0) out[blockIdx.x] = s[0];
    }
"""
LAUNCH = {"kernel": "block_sum", "grid": ["ceil_div(n, 256)"], "block": [256], "args": ["x", "out", "n"]}
CORRECT = submission(TREE_REDUCTION, LAUNCH)
# The mutant: the barrier inside the loop is gone (the one after the load stays).
NO_LOOP_BARRIER = submission(TREE_REDUCTION.replace("s[t + k];\n            __syncthreads();", "s[t + k];"),
                             LAUNCH)
assert NO_LOOP_BARRIER.count("__syncthreads") == 1


def reduction_cases() -> tuple[list[RunCase], list[np.ndarray]]:
    """Integer-valued inputs (any summation order is exact) at sizes with ragged last blocks."""
    cases, want = [], []
    for n in (256, 1000, 4099):
        x = np.random.default_rng(n).integers(1, 9, n).astype(np.float32)
        padded = np.zeros(-(-n // 256) * 256, np.float32)
        padded[:n] = x
        cases.append(RunCase({"x": x}, {"out": ((len(padded) // 256,), "float32")}, {"n": n}))
        want.append(padded.reshape(-1, 256).sum(1))
    return cases, want


class TestMissingBarrier:
    def test_wrong_under_ascending(self):
        """Thread 0 runs first and reads partial sums its partners have not written yet."""
        cases, want = reduction_cases()
        for i, (r, w) in enumerate(zip(compiled(NO_LOOP_BARRIER, False).run_batch(cases, schedule="ascending"), want)):
            assert r.ok, r.message
            assert not np.array_equal(r.outputs["out"], w), f"case {i}: the race did not show"
            full = slice(0, r.outputs["out"].size - (cases[i].dims["n"] % 256 != 0))
            assert np.all(r.outputs["out"][full] < w[full]), f"case {i}: every full block misses partial sums"

    def test_right_under_descending(self):
        """Run from the last thread down, every partner finishes before its reader: the mutant survives."""
        cases, want = reduction_cases()
        for i, (r, w) in enumerate(zip(compiled(NO_LOOP_BARRIER, False).run_batch(cases, schedule="descending"), want)):
            assert r.ok, r.message
            np.testing.assert_array_equal(r.outputs["out"], w, err_msg=f"case {i}")

    @pytest.mark.parametrize("schedule", ["shuffled:1", "shuffled:2"])
    def test_wrong_under_a_shuffle(self, schedule):
        """A seeded random order catches the race too."""
        cases, want = reduction_cases()
        results = compiled(NO_LOOP_BARRIER, False).run_batch(cases, schedule=schedule)
        assert all(r.ok for r in results)
        assert any(not np.array_equal(r.outputs["out"], w) for r, w in zip(results, want))

    @pytest.mark.parametrize("schedule", SCHEDULES)
    def test_correct_reduction_is_right_under_every_schedule(self, schedule):
        """With its barrier the reduction is exact under all orders."""
        cases, want = reduction_cases()
        for i, (r, w) in enumerate(zip(compiled(CORRECT, False).run_batch(cases, schedule=schedule), want)):
            assert r.ok, r.message
            np.testing.assert_array_equal(r.outputs["out"], w, err_msg=f"case {i} [{schedule}]")

    def test_missing_barrier_before_a_reverse_read_is_always_wrong(self):
        """Reading a neighbour's shared slot before any barrier reads poison under every order."""
        source = submission("""
            extern "C" __global__ void reverse(const float* x, float* out) {
                __shared__ float tile[128];
                tile[threadIdx.x] = x[threadIdx.x];
                out[threadIdx.x] = tile[127 - threadIdx.x];
            }
        """, {"kernel": "reverse", "grid": [1], "block": [128], "args": ["x", "out"]})
        x = np.arange(128, dtype=np.float32)
        for schedule in SCHEDULES:
            r = compiled(source, False).run({"x": x}, {"out": ((128,), "float32")}, {}, schedule=schedule)
            assert r.ok and not np.array_equal(r.outputs["out"], x[::-1]), schedule


# ============================================================================ the orders themselves

ORDER_RECORDER = """
    extern "C" __global__ void init(unsigned* counter) { counter[0] = 0u; }
    extern "C" __global__ void record(unsigned* counter, int* order) {
        BARRIER
        unsigned ticket = atomicAdd(counter, 1u);
        order[ticket] = blockIdx.x * blockDim.x + threadIdx.x;
    }
"""
RECORDERS = {
    mode: submission(ORDER_RECORDER.replace("BARRIER", barrier),
                     {"kernel": "init", "grid": [1], "block": [1], "args": ["counter"]},
                     {"kernel": "record", "grid": [4], "block": [64], "args": ["counter", "order"]})
    for mode, barrier in (("plain", ""), ("fibers", "__syncthreads();"))
}


def run_order(mode: str, schedule: str) -> np.ndarray:
    """The global thread ids in the order the emulator ran them."""
    r = compiled(RECORDERS[mode], False).run({}, {"counter": ((1,), "uint32"), "order": ((256,), "int32")}, {},
                                      schedule=schedule)
    assert r.ok, r.message
    return r.outputs["order"]


@pytest.mark.parametrize("mode", ["plain", "fibers"])
class TestOrders:
    def test_ascending_and_descending(self, mode):
        """ascending runs thread 0 of block 0 first; descending the last thread of the last block."""
        np.testing.assert_array_equal(run_order(mode, "ascending"), np.arange(256))
        np.testing.assert_array_equal(run_order(mode, "descending"), np.arange(256)[::-1])

    def test_shuffle_is_a_blockwise_permutation_that_differs_per_block(self, mode):
        """A shuffle runs one block at a time, each in its own random thread order."""
        order = run_order(mode, "shuffled:1")
        assert sorted(order.tolist()) == list(range(256))
        blocks = order.reshape(4, 64) // 64
        assert (blocks == blocks[:, :1]).all(), "threads of different blocks interleaved"
        within = order.reshape(4, 64) % 64
        assert not (within == np.arange(64)).all(1).any() and not (within == np.arange(64)[::-1]).all(1).any()
        assert len({tuple(w) for w in within}) == 4, "every block got the same thread order"

    def test_same_seed_same_order_other_seed_other_order(self, mode):
        """shuffled:1 twice gives one order, shuffled:2 another; bare `shuffled` is seed 0."""
        first, again = run_order(mode, "shuffled:1"), run_order(mode, "shuffled:1")
        np.testing.assert_array_equal(first, again)
        assert not np.array_equal(first, run_order(mode, "shuffled:2"))
        np.testing.assert_array_equal(run_order(mode, "shuffled"), run_order(mode, "shuffled:0"))


@pytest.mark.parametrize("schedule", ["shuffled:1", "shuffled:2"])
def test_shuffled_outputs_are_bit_identical_across_runs(schedule):
    """The racy reduction over random floats gives the same output bits on every run of a seed."""
    x = np.random.default_rng(0).standard_normal(4099).astype(np.float32)
    case = RunCase({"x": x}, {"out": ((17,), "float32")}, {"n": 4099})
    kernel = compiled(NO_LOOP_BARRIER, False)
    runs = [kernel.run_batch([case, case], schedule=schedule) for _ in range(2)]
    bits = [r.outputs["out"].view(np.uint32) for batch in runs for r in batch]
    for other in bits[1:]:
        np.testing.assert_array_equal(bits[0], other)


@pytest.mark.parametrize("schedule", ["random", "shuffled:x", "ascending:3", "", "Shuffled:1", " descending",
                                      "shuffled:-1"])
def test_unknown_schedule_is_a_value_error(schedule):
    """A schedule that is not ascending, descending or shuffled[:seed] is refused, quoting it."""
    kernel = compiled(CORRECT, False)
    x = np.ones(256, np.float32)
    expected = rf"unknown schedule {schedule!r}; expected 'ascending', 'descending' or 'shuffled\[:seed\]'"
    with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        kernel.run({"x": x}, {"out": ((1,), "float32")}, {"n": 256}, schedule=schedule)
    with pytest.raises(ValueError, match="unknown schedule"):
        kernel.run_batch([RunCase({"x": x}, {"out": ((1,), "float32")}, {"n": 256})], schedule=schedule)


def test_non_string_schedule_is_a_value_error():
    """A schedule given as a number is refused the same way."""
    with pytest.raises(ValueError, match="unknown schedule 1"):
        compiled(CORRECT, False).run({"x": np.ones(256, np.float32)}, {"out": ((1,), "float32")}, {"n": 256},
                              schedule=1)


BLOCK_IDS = """/* mutagym
[[launch]]
kernel = "k"
grid = ["g"]
block = [4]
args = ["out", "g"]
*/
extern "C" __global__ void k(int* out, int g) {
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x;
}
"""


@pytest.mark.parametrize("schedule", ["shuffled", "shuffled:3", "descending"])
def test_every_block_runs_exactly_once_for_small_grids(schedule):
    """The block order is a permutation for every grid size (a grid of 3 once hung when shuffled)."""
    k = compiled(BLOCK_IDS, False)
    cases = [RunCase({}, {"out": ((g,), "int32")}, {"g": g}) for g in range(1, 10)]
    for g, r in zip(range(1, 10), k.run_batch(cases, schedule=schedule, timeout_s=5)):
        assert r.ok, (g, r.outcome, r.message)
        assert r.outputs["out"].tolist() == list(range(g)), g


ACCUMULATE = submission("""
    extern "C" __global__ void acc(const float* x, float* total, float* out, float* half) {
        total[threadIdx.x] += x[threadIdx.x];
        out[threadIdx.x] = total[threadIdx.x];
        if (threadIdx.x % 2 == 0) half[threadIdx.x] = x[threadIdx.x];
    }
""", {"kernel": "acc", "grid": [1], "block": [64], "args": ["x", "total", "out", "half"]},
    scratches=({"name": "total", "dtype": "float32", "size": "64", "init": "zero"},))


@pytest.mark.parametrize("source", [NO_LOOP_BARRIER, ACCUMULATE], ids=["racy", "accumulating"])
def test_run_schedules_equals_one_batch_per_schedule(source):
    """One buffer layout for several schedules gives what separate batches give: each schedule
    starts from freshly initialised outputs and scratch (the accumulator holds x, not 2x; the
    unwritten half of an output is poison), and a race differs by order as before."""
    if source is ACCUMULATE:
        x = np.arange(64, dtype=np.float32)
        cases = [RunCase({"x": x}, {"out": ((64,), "float32"), "half": ((64,), "float32")})] * 2
    else:
        cases = reduction_cases()[0]
    kernel = compiled(source, False)
    runs = kernel.run_schedules(cases, SCHEDULES)
    assert list(runs) == list(SCHEDULES)
    for schedule in SCHEDULES:
        alone = kernel.run_batch(cases, schedule=schedule)
        for together, single in zip(runs[schedule], alone):
            assert together.outcome == single.outcome == "ok"
            assert together.outputs.keys() == single.outputs.keys()
            for name in single.outputs:
                assert together.outputs[name].tobytes() == single.outputs[name].tobytes(), (schedule, name)
    if source is ACCUMULATE:
        np.testing.assert_array_equal(runs["descending"][1].outputs["out"], x)
        poison = initial_output(cases[1], "half")[1::2]
        assert runs["descending"][1].outputs["half"][1::2].tobytes() == poison.tobytes()
