"""The emulator's race, state and spin checks, on the real runner, in every thread order.

A GPU runs threads and blocks at once; the emulator one at a time, so a missing barrier shows only
under some orders and a lost update never (see `mutagym.runtime.races`). Each fault class below is
caught as its own outcome under every schedule, and each benign pattern of ordinary CUDA code
(barriers, atomics of every kind, read-only sharing, warp-synchronous code with __syncwarp,
fence-and-ticket between blocks, the CAS loop, same-value stores) runs clean and right.
"""

from __future__ import annotations

import numpy as np
import pytest

from mutagym.runtime import RunCase
from submission_text import compiled, launch, scratch, submission
from test_schedules import LAUNCH, TREE_REDUCTION

SCHEDULES = ("ascending", "descending", "shuffled:1", "shuffled:2")


def run(source: str, cases: list[RunCase], schedule: str, race_check: bool | None = None):
    return compiled(source, race_check).run_batch(cases, schedule=schedule)


def vector(n: int, seed: int = 0, *, integers: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(-4, 5, n) if integers else rng.standard_normal(n)).astype(np.float32)


def rows_case(rows: int, cols: int, seed: int = 0) -> tuple[RunCase, np.ndarray]:
    x = vector(rows * cols, seed).reshape(rows, cols)
    return RunCase({"x": x}, {"out": ((rows,), "float32")}, {"rows": rows, "cols": cols}), x.sum(1)


# ------------------------------------------------------------------ faults
# The tree reduction of test_schedules.py, whose missing barrier shows there only under some orders.
BLOCK_SUM, BLOCK_SUM_LAUNCH = TREE_REDUCTION, LAUNCH
MISSING_LOOP_BARRIER = submission(
    BLOCK_SUM.replace("s[t + k];\n            __syncthreads();", "s[t + k];"), BLOCK_SUM_LAUNCH)

# Many blocks add their partial sums of a row into out[row] with a plain +=: a GPU loses updates.
PLAIN_ACCUMULATE = submission("""
    extern "C" __global__ void row_sum(const float* x, float* out, int rows, int cols) {
        int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
        __shared__ float s[64];
        s[threadIdx.x] = col < cols ? x[row * cols + col] : 0.0f;
        __syncthreads();
        if (threadIdx.x == 0) {
            float partial = 0.0f;
            for (int k = 0; k < 64; k++) partial += s[k];
            if (blockIdx.x == 0) out[row] = 0.0f;
            __threadfence();
            out[row] += partial;
        }
    }
""", launch("row_sum", ["ceil_div(cols, 64)", "rows"], [64], ["x", "out", "rows", "cols"]))

# Two block reductions share one buffer of per-warp partials with no barrier between them: warp 1
# writes its second partial while warp 0 may still read the first ones. Shuffles order one warp only.
SHUFFLE_PHASES = """
    __device__ float warp_sum(float v) {
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        return v;
    }
    __device__ float block_sum(float v, float* partials) {
        int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        v = warp_sum(v);
        if (lane == 0) partials[warp] = v;
        __syncthreads();
        v = lane < blockDim.x / 32 ? partials[lane] : 0.0f;
        if (warp == 0) v = warp_sum(v);
        return __shfl_sync(0xffffffffu, v, 0);
    }
    extern "C" __global__ void sum_and_sumsq(const float* x, float* out, int rows, int cols) {
        __shared__ float partials[32];
        const float* row = x + blockIdx.x * cols;
        float a = 0.0f, b = 0.0f;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) { a += row[c]; b += row[c] * row[c]; }
        float sum = block_sum(a, partials);
        BETWEEN
        float sumsq = block_sum(b, partials);
        if (threadIdx.x == 0) out[blockIdx.x] = sum + sumsq;
    }
"""
SHUFFLE_LAUNCH = launch("sum_and_sumsq", ["rows"], [128], ["x", "out", "rows", "cols"])
SHUFFLE_PHASES_RACY = submission(SHUFFLE_PHASES.replace("BETWEEN", ""), SHUFFLE_LAUNCH)
SHUFFLE_PHASES_SYNCED = submission(SHUFFLE_PHASES.replace("BETWEEN", "__syncthreads();"), SHUFFLE_LAUNCH)

# A counter every block increments with a plain read-modify-write.
PLAIN_COUNTER = submission("""
    extern "C" __global__ void count(const float* x, float* counter, int n) {
        if (threadIdx.x == 0) counter[0] = counter[0] + 1.0f;
    }
    extern "C" __global__ void copy(const float* counter, float* out, int n) { out[0] = counter[0]; }
""", launch("count", ["64"], [32], ["x", "counter", "n"]), launch("copy", ["1"], [1], ["counter", "out", "n"]),
    scratches=(scratch("counter", "float32", "1", "zero"),))

# Thread t publishes out[t] and reads its neighbour's without a barrier between.
NEIGHBOUR_WITHOUT_BARRIER = """
    extern "C" __global__ void neighbour(const float* x, float* out, int n) {
        int t = threadIdx.x;
        out[t] = x[t];
        BETWEEN
        float right = out[(t + 1) % blockDim.x];
        BETWEEN
        out[t] = out[t] + right;
    }
"""
NEIGHBOUR_LAUNCH = launch("neighbour", ["1"], [64], ["x", "out", "n"])


def vector_case(n: int, out: int | None = None) -> RunCase:
    return RunCase({"x": vector(n)}, {"out": ((out or n,), "float32")}, {"n": n})


FAULTS = {
    "missing loop barrier": (MISSING_LOOP_BARRIER, [vector_case(1000, 4)]),
    "plain += from many blocks": (PLAIN_ACCUMULATE, [rows_case(3, 300)[0]]),
    "shuffle phases sharing a buffer": (SHUFFLE_PHASES_RACY, [rows_case(4, 500)[0]]),
    "plain counter of 64 blocks": (PLAIN_COUNTER, [vector_case(64, 1)]),
    "global neighbour without barrier": (submission(NEIGHBOUR_WITHOUT_BARRIER.replace("BETWEEN", ""),
                                                    NEIGHBOUR_LAUNCH), [vector_case(64)]),
}


class TestFaults:
    @pytest.mark.parametrize("schedule", SCHEDULES)
    @pytest.mark.parametrize("name", sorted(FAULTS))
    def test_caught_in_every_order(self, name, schedule):
        source, cases = FAULTS[name]
        [result] = run(source, cases, schedule)
        assert result.outcome == "data_race", (result.outcome, result.message)
        assert "data race on" in result.message and "thread (" in result.message

    def test_message_names_both_threads_the_line_and_the_element(self):
        [result] = run(MISSING_LOOP_BARRIER, [vector_case(1000, 4)], "ascending")
        assert "of __shared__ 's'" in result.message
        assert "thread (1,0,0) of block (0,0,0) writes it at line 14" in result.message
        assert "thread (0,0,0) of block (0,0,0) read it" in result.message

    def test_other_block_is_named(self):
        [result] = run(PLAIN_COUNTER, [vector_case(64, 1)], "ascending")
        assert "element 0 of scratch 'counter'" in result.message, result.message
        assert "of block (1,0,0) reads it" in result.message and "of block (0,0,0) wrote it" in result.message

    def test_found_early_in_a_case_past_the_budget(self):
        """A case larger than the checks' budget is checked in its first blocks: the lost update
        between the first two blocks of a row shows, and a correct kernel of that size is clean."""
        case, want = rows_case(2, 600_000)
        [racy] = run(PLAIN_ACCUMULATE, [case], "ascending")
        assert racy.outcome == "data_race", (racy.outcome, racy.message)
        [clean] = run(submission(BLOCK_SUM, BLOCK_SUM_LAUNCH), [vector_case(1_200_000, 4688)], "ascending")
        assert clean.ok, (clean.outcome, clean.message)

    def test_hidden_without_the_detector(self):
        """What the checks add: without them the shuffle race is right here in every order."""
        case, want = rows_case(4, 500)
        x = case.inputs["x"]
        for schedule in SCHEDULES:
            [r] = run(SHUFFLE_PHASES_RACY, [case], schedule, race_check=False)
            assert r.ok, (r.outcome, r.message)
            np.testing.assert_allclose(r.outputs["out"], want + (x * x).sum(1), rtol=1e-5)


# ------------------------------------------------------------------ benign patterns
ATOMICS = submission("""
    __device__ float atomic_max_float(float* address, float value) {
        int* bits = (int*)address;
        int old = *bits, assumed;              // a plain read, then the CAS loop (Programming Guide)
        do {
            assumed = old;
            if (__int_as_float(assumed) >= value) break;
            old = atomicCAS(bits, assumed, __float_as_int(value));
        } while (assumed != old);
        return __int_as_float(old);
    }
    extern "C" __global__ void stats(const float* x, float* acc, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            atomicAdd(&acc[0], x[i]);
            atomic_max_float(&acc[1], x[i]);
            atomicMin((int*)&acc[2], (int)x[i]);
            atomicMax((int*)&acc[3], (int)x[i]);
            atomicAdd((unsigned*)&acc[4], 1u);
            atomicExch(&acc[5], 7.0f);
            atomicInc((unsigned*)&acc[6], 1000000u);
            atomicOr((unsigned*)&acc[7], 1u << (i % 8));
        }
    }
    extern "C" __global__ void widen(const float* acc, float* out, int n) {
        int k = threadIdx.x;
        out[k] = k == 0 || k == 1 || k == 5 ? acc[k] : (float)((const int*)acc)[k];
    }
""", launch("stats", ["ceil_div(n, 64)"], [64], ["x", "acc", "n"]), launch("widen", ["1"], [8], ["acc", "out", "n"]),
    scratches=(scratch("acc", "float32", "8", "zero"),))

READ_ONLY_SHARING = submission("""
    extern "C" __global__ void scale(const float* x, float* out, int n) {
        __shared__ float factor;
        if (threadIdx.x == 0) factor = x[0];
        __syncthreads();
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = x[i] * factor + x[0];
    }
""", launch("scale", ["ceil_div(n, 128)"], [128], ["x", "out", "n"]))

SYNCWARP_REDUCTION = submission("""
    extern "C" __global__ void warp_sums(const float* x, float* out, int n) {
        __shared__ float s[64];
        int t = threadIdx.x;
        s[t] = x[blockIdx.x * 64 + t];
        __syncthreads();
        if (t < 32) {
            s[t] += s[t + 32]; __syncwarp();
            for (int k = 16; k > 0; k >>= 1) {
                float v = t < k ? s[t + k] : 0.0f;
                __syncwarp();
                if (t < k) s[t] += v;
                __syncwarp();
            }
        }
        if (t == 0) out[blockIdx.x] = s[0];
    }
""", launch("warp_sums", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))

BARRIER_ORDERS_GLOBAL = submission(NEIGHBOUR_WITHOUT_BARRIER.replace("BETWEEN", "__syncthreads();"),
                                   NEIGHBOUR_LAUNCH)

# The last block to finish adds the partial sums: __threadfence, then an atomic ticket.
LAST_BLOCK = submission("""
    extern "C" __global__ void total(const float* x, float* out, float* partial, unsigned* ticket, int n) {
        __shared__ float s[128];
        __shared__ bool last;
        int t = threadIdx.x, i = blockIdx.x * 128 + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int k = 64; k > 0; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t == 0) {
            partial[blockIdx.x] = s[0];
            __threadfence();
            unsigned done = atomicInc(ticket, gridDim.x);
            last = done == gridDim.x - 1;
        }
        __syncthreads();
        if (last && t == 0) {
            float sum = 0.0f;
            for (int b = 0; b < gridDim.x; b++) sum += partial[b];
            out[0] = sum;
            *ticket = 0;
        }
    }
""", launch("total", ["ceil_div(n, 128)"], [128], ["x", "out", "partial", "ticket", "n"]),
    scratches=(scratch("partial", "float32", "ceil_div(n, 128)"), scratch("ticket", "uint32", "1", "zero")))

# Every lane gets the warp's total by a butterfly, and every lane stores it: the same bytes.
SAME_VALUE_STORES = submission("""
    extern "C" __global__ void warp_total(const float* x, float* out, int n) {
        __shared__ float total;
        float v = x[blockIdx.x * 32 + threadIdx.x];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        total = v;
        out[blockIdx.x] = v;
        __syncthreads();
        if (threadIdx.x == 0) out[blockIdx.x] = total * 2.0f - v;
    }
""", launch("warp_total", ["ceil_div(n, 32)"], [32], ["x", "out", "n"]))

# Lanes of a partial mask: the first 16 lanes exchange through shared memory, ordered by their own
# __syncwarp(mask).
PARTIAL_MASK = submission("""
    extern "C" __global__ void halves(const float* x, float* out, int n) {
        __shared__ float s[32];
        int t = threadIdx.x;
        if (t < 16) {
            s[t] = x[t];
            __syncwarp(0x0000ffffu);
            out[t] = s[15 - t];
        } else {
            out[t] = x[t];
        }
    }
""", launch("halves", ["1"], [32], ["x", "out", "n"]))

# Two launches: the second reads what the first wrote (a kernel boundary orders everything).
TWO_LAUNCHES = submission("""
    extern "C" __global__ void stage1(const float* x, float* tmp, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) tmp[i] = 2.0f * x[i];
    }
    extern "C" __global__ void stage2(const float* tmp, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = tmp[(i + 1) % n] + tmp[i];
    }
""", launch("stage1", ["ceil_div(n, 64)"], [64], ["x", "tmp", "n"]),
    launch("stage2", ["ceil_div(n, 64)"], [64], ["tmp", "out", "n"]),
    scratches=(scratch("tmp", "float32", "n"),))


# Each thread reads, then writes, its own 2-byte element of a zeroed buffer (an in-place update):
# the neighbour's element shares the 4-byte word, and neither thread touches the other's bytes.
HALF_NEIGHBOURS = submission("""
    #include <cuda_fp16.h>
    extern "C" __global__ void accumulate(const float* x, float* out, __half* h, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            h[i] = h[i] + __float2half(2.0f * x[i] + 1.0f);
            out[i] = __half2float(h[i]);
        }
    }
""", launch("accumulate", ["ceil_div(n, 64)"], [64], ["x", "out", "h", "n"]),
    scratches=(scratch("h", "float16", "n", "zero"),))

BENIGN = {
    "race-free tree reduction": (submission(BLOCK_SUM, BLOCK_SUM_LAUNCH), vector(1000),
                                 lambda x: np.pad(x, (0, 24)).reshape(-1, 256).sum(1), 4),
    "read-only sharing": (READ_ONLY_SHARING, vector(300), lambda x: x * x[0] + x[0], 300),
    "__syncwarp-ordered warp reduction": (SYNCWARP_REDUCTION, vector(256), lambda x: x.reshape(-1, 64).sum(1), 4),
    "__syncthreads orders global memory": (BARRIER_ORDERS_GLOBAL, vector(64),
                                           lambda x: x + np.roll(x, -1), 64),
    "last block finishes (__threadfence + ticket)": (LAST_BLOCK, vector(1000), lambda x: x.sum(keepdims=True), 1),
    "same-value stores by every lane": (SAME_VALUE_STORES, vector(96), lambda x: x.reshape(-1, 32).sum(1), 3),
    "__syncwarp of a partial mask": (PARTIAL_MASK, vector(32),
                                    lambda x: np.concatenate([x[:16][::-1], x[16:]]), 32),
    "two launches through scratch": (TWO_LAUNCHES, vector(200), lambda x: 2 * x + 2 * np.roll(x, -1), 200),
    "half-precision neighbours, each thread its own element": (HALF_NEIGHBOURS, vector(200), lambda x: 2 * x + 1, 200),
}


class TestBenign:
    @pytest.mark.parametrize("schedule", SCHEDULES)
    @pytest.mark.parametrize("name", sorted(BENIGN))
    def test_clean_and_right_in_every_order(self, name, schedule):
        source, x, want, out = BENIGN[name]
        [result] = run(source, [RunCase({"x": x}, {"out": ((out,), "float32")}, {"n": len(x)})], schedule)
        assert result.ok, (result.outcome, result.message)
        np.testing.assert_allclose(result.outputs["out"], want(x), rtol=1e-6)

    @pytest.mark.parametrize("schedule", SCHEDULES)
    def test_atomics_of_every_kind(self, schedule):
        x = vector(500, 3)
        ints = x.astype(np.int32)
        want = [x.sum(), max(0, x.max()), min(0, ints.min()), max(0, ints.max()), len(x), 7, len(x), 0xff]
        [result] = run(ATOMICS, [RunCase({"x": x}, {"out": ((8,), "float32")}, {"n": len(x)})], schedule)
        assert result.ok, (result.outcome, result.message)
        np.testing.assert_array_equal(result.outputs["out"], np.array(want, np.float32))

    @pytest.mark.parametrize("schedule", SCHEDULES)
    def test_shuffle_phases_with_their_barrier(self, schedule):
        case, want = rows_case(4, 500)
        [result] = run(SHUFFLE_PHASES_SYNCED, [case], schedule)
        assert result.ok, (result.outcome, result.message)
        x = case.inputs["x"]
        np.testing.assert_allclose(result.outputs["out"], want + (x * x).sum(1), rtol=1e-5)


# ------------------------------------------------------------------ state across launches
COUNTING_KERNEL = submission("""
    __device__ int launches;
    extern "C" __global__ void relu(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        bool tired = launches >= 1;
        __syncthreads();
        if (i == 0) launches = launches + 1;
        if (i < n) out[i] = tired ? x[i] : fmaxf(x[i], 0.0f);
    }
""", launch("relu", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))

ATOMIC_COUNTER_KERNEL = submission("""
    __device__ unsigned calls;
    extern "C" __global__ void relu(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned seen = 0;
        if (i == 0) seen = atomicAdd(&calls, 1u);
        if (i < n) out[i] = seen > 2 ? x[i] : fmaxf(x[i], 0.0f);
    }
""", launch("relu", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))

SCRATCH_REWRITTEN = submission("""
    __device__ float stash[64];
    extern "C" __global__ void relu(const float* x, float* out, int n) {
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        stash[t] = i < n ? fmaxf(x[i], 0.0f) : 0.0f;
        __syncthreads();
        if (i < n) out[i] = stash[t];
        __syncthreads();
    }
""", launch("relu", ["1"], [64], ["x", "out", "n"]))


class TestState:
    def cases(self, k: int = 3) -> list[RunCase]:
        return [RunCase({"x": vector(64, s, integers=False)}, {"out": ((64,), "float32")}, {"n": 64})
                for s in range(k)]

    @pytest.mark.parametrize("source", [COUNTING_KERNEL, ATOMIC_COUNTER_KERNEL], ids=["plain", "atomic"])
    def test_state_read_back_is_its_own_outcome(self, source):
        results = run(source, self.cases(5), "ascending")
        assert results[0].ok
        outcomes = [r.outcome for r in results]
        assert "stateful_kernel" in outcomes, outcomes
        bad = next(r for r in results if r.outcome == "stateful_kernel")
        assert "__device__ variable" in bad.message and "earlier launch changed" in bad.message, bad.message

    def test_scratch_rewritten_before_read_is_allowed(self):
        results = run(SCRATCH_REWRITTEN, self.cases(4), "shuffled:3")
        assert all(r.ok for r in results), [(r.outcome, r.message) for r in results]
        for r, case in zip(results, self.cases(4)):
            np.testing.assert_array_equal(r.outputs["out"], np.maximum(case.inputs["x"], 0))


# ------------------------------------------------------------------ spins
# Block 1 waits for a flag that block 0 sets: fine on a GPU (both resident), impossible here.
LOOK_BACK = submission("""
    extern "C" __global__ void chain(const float* x, float* out, unsigned* flag, int n) {
        if (threadIdx.x != 0) return;
        if (blockIdx.x == 1) {
            while (atomicAdd(flag, 0u) == 0u) { }
            out[1] = out[0] + x[1];
        } else {
            out[0] = x[0];
            __threadfence();
            atomicExch(flag, 1u);
        }
    }
""", launch("chain", ["2"], [32], ["x", "out", "flag", "n"]), scratches=(scratch("flag", "uint32", "1", "zero"),))

VOLATILE_SPIN = submission("""
    extern "C" __global__ void wait_for(const float* x, float* out, unsigned* flag, int n) {
        volatile unsigned* f = flag;
        if (blockIdx.x == 0 && threadIdx.x == 0) { while (f[0] == 0u) { } out[0] = x[0]; }
        if (blockIdx.x == 1 && threadIdx.x == 0) { out[1] = x[1]; f[0] = 1u; }
    }
""", launch("wait_for", ["2"], [32], ["x", "out", "flag", "n"]), scratches=(scratch("flag", "uint32", "1", "zero"),))


class TestSpins:
    @pytest.mark.parametrize("source", [LOOK_BACK, VOLATILE_SPIN], ids=["atomic", "volatile"])
    def test_a_wait_on_another_block_is_named(self, source):
        case = RunCase({"x": vector(2)}, {"out": ((2,), "float32")}, {"n": 2})
        schedule = "ascending" if source is VOLATILE_SPIN else "descending"
        [result] = run(source, [case], schedule)
        assert result.outcome == "sync_error", (result.outcome, result.message)
        assert "waits for element 0 of scratch 'flag' to change" in result.message, result.message
        assert "one block at a time" in result.message

    def test_caught_without_the_race_instrumentation(self):
        """Atomics report to the runner in every build: the spin is named with the checks off too."""
        case = RunCase({"x": vector(2)}, {"out": ((2,), "float32")}, {"n": 2})
        [result] = run(LOOK_BACK, [case], "descending", race_check=False)
        assert result.outcome == "sync_error" and "waits for element 0" in result.message, result.message


# ------------------------------------------------------------------ the unchecked object
# Blocks the checks do not watch run a plain build of the same text; the kernel's __device__ data is
# copied between the two builds whenever the running block's build changes.
DEVICE_PARTIALS = submission("""
    __device__ float partial[1024];
    __device__ unsigned ticket;
    extern "C" __global__ void total(const float* x, float* out, int n) {
        __shared__ float s[64];
        __shared__ bool last;
        int t = threadIdx.x, i = blockIdx.x * 64 + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int k = 32; k > 0; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t == 0) {
            partial[blockIdx.x] = s[0];
            __threadfence();
            last = atomicInc(&ticket, gridDim.x - 1) == gridDim.x - 1;   // wraps to 0
        }
        __syncthreads();
        if (last && t == 0) {
            float sum = 0.0f;
            for (int b = 0; b < gridDim.x; b++) sum += partial[b];
            out[0] = sum;
        }
    }
""", launch("total", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))

# One block of 64, chosen to be unwatched under the seeds used, counts launches; every block reads it.
UNWATCHED_COUNTER = submission("""
    __device__ int launches;
    extern "C" __global__ void relu(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        bool tired = launches >= 1;
        __syncthreads();
        if (blockIdx.x == BLOCK && threadIdx.x == 0) launches = launches + 1;
        if (i < n) out[i] = tired ? x[i] : fmaxf(x[i], 0.0f);
    }
""", launch("relu", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))

POINTER_TO_DATA = submission("""
    __device__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    __device__ float* entry = table + 2;
    extern "C" __global__ void scale(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = x[i] * *entry;
    }
""", launch("scale", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))


class TestUncheckedObject:
    def test_unwatched_blocks_run_a_plain_build(self):
        kernel = compiled(DEVICE_PARTIALS)._impl
        assert kernel.unchecked_path is not None and kernel.unchecked_path != kernel.object_path
        assert sorted(size for _, size in kernel.shared_data) == [4, 4096]

    @pytest.mark.parametrize("schedule", SCHEDULES)
    def test_data_written_by_unwatched_blocks_reaches_the_watched_ones(self, schedule):
        """The last block sums partials that mostly unwatched blocks wrote in this launch: right, and
        not state from an earlier launch; every case again, as the ticket wraps to zero."""
        n = 64 * 300
        cases = [RunCase({"x": vector(n, s)}, {"out": ((1,), "float32")}, {"n": n}) for s in range(3)]
        for result, case in zip(run(DEVICE_PARTIALS, cases, schedule), cases):
            assert result.ok, (result.outcome, result.message)
            assert result.outputs["out"][0] == case.inputs["x"].sum()

    @pytest.mark.parametrize("block", [5, 37])
    def test_state_left_by_an_unwatched_block_is_caught(self, block):
        source = UNWATCHED_COUNTER.replace("BLOCK", str(block))
        cases = [RunCase({"x": vector(64 * 64, s, integers=False)}, {"out": ((64 * 64,), "float32")},
                         {"n": 64 * 64}) for s in range(3)]
        outcomes = [r.outcome for r in run(source, cases, "ascending")]
        assert outcomes[0] == "ok" and "stateful_kernel" in outcomes, outcomes

    @pytest.mark.parametrize("source", [POINTER_TO_DATA, VOLATILE_SPIN], ids=["pointer", "volatile"])
    def test_kernels_whose_data_cannot_be_shared_run_checked(self, source):
        assert compiled(source)._impl.unchecked_path is None

    def test_an_initialised_pointer_into_the_data_stays_right(self):
        n = 64 * 40
        case = RunCase({"x": vector(n)}, {"out": ((n,), "float32")}, {"n": n})
        [result] = run(POINTER_TO_DATA, [case], "shuffled:1")
        assert result.ok, (result.outcome, result.message)
        np.testing.assert_array_equal(result.outputs["out"], case.inputs["x"] * 3)
