"""CUDA's pipeline primitives (`<cuda_pipeline.h>`, runtime/csrc/mg_pipeline.h) on the real runner.

A copy must land in shared memory when a wait of the issuing thread retires its group, never
before, in every thread order: otherwise a kernel that forgets the wait, waits for the wrong
number of groups or never commits would pass on the emulator and fail on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from mutagym.runtime import RunCase
from mutagym.runtime.nvrtc_gate import nvrtc_gate
from submission_text import compiled, launch, submission

SCHEDULES = ("ascending", "descending", "shuffled:3")

# One thread per block snapshots its shared tile into `out` after each step: row 0 before any
# wait, row 1 after wait_prior(1), row 2 after wait_prior(0). Group 0 copies x[0:4] (one 16-byte
# copy), group 1 copies x[4:8] (two 8-byte copies), the uncommitted tail x[8:12] four 4-byte ones.
STEPS = submission("""
    #include <cuda_pipeline.h>
    __device__ void snapshot(const float* s, float* row) {
        for (int k = 0; k < 12; k++) row[k] = s[k];
    }
    extern "C" __global__ void steps(const float* x, float* out) {
        __shared__ __align__(16) float s[12];
        for (int k = 0; k < 12; k++) s[k] = -1.0f;
        __pipeline_memcpy_async(&s[0], &x[0], 16);
        __pipeline_commit();
        __pipeline_memcpy_async(&s[4], &x[4], 8);
        __pipeline_memcpy_async(&s[6], &x[6], 8);
        __pipeline_commit();
        for (int k = 8; k < 12; k++) __pipeline_memcpy_async(&s[k], &x[k], 4);
        snapshot(s, out);
        __pipeline_wait_prior(1);
        snapshot(s, out + 12);
        __pipeline_wait_prior(0);
        snapshot(s, out + 24);
    }
""", launch("steps", [1], [1], ["x", "out"]))

X = np.arange(1, 13, dtype=np.float32)


def _steps() -> np.ndarray:
    result = compiled(STEPS).run({"x": X}, {"out": ((36,), "float32")}, {})
    assert result.outcome == "ok", result.message
    return result.outputs["out"].reshape(3, 12)


def test_a_copy_lands_at_the_wait_not_before():
    assert (_steps()[0] == -1).all()


def test_wait_prior_one_leaves_the_newest_group_pending():
    after = _steps()[1]
    np.testing.assert_array_equal(after[:4], X[:4])
    assert (after[4:] == -1).all()


def test_groups_retire_in_order_and_uncommitted_copies_stay_pending():
    after = _steps()[2]
    np.testing.assert_array_equal(after[:8], X[:8])   # sizes 16 and 8
    assert (after[8:] == -1).all()                     # issued after the last commit


# 64 threads stage a tile with 4-byte copies; thread t then reads element 63 - t, written by
# another thread, after the barrier. With the wait in place every order gives x reversed.
TILE = """
    #include <cuda_pipeline.h>
    extern "C" __global__ void reverse(const float* x, float* out) {
        __shared__ float s[64];
        int t = threadIdx.x;
        __pipeline_memcpy_async(&s[t], &x[t], sizeof(float));
        __pipeline_commit();
        WAIT
        __syncthreads();
        out[t] = s[63 - t];
    }
"""
TILE_LAUNCH = launch("reverse", [1], [64], ["x", "out"])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("wait, right", [("__pipeline_wait_prior(0);", True), ("", False),
                                         ("__pipeline_wait_prior(1);", False)])
def test_a_missing_or_short_wait_reads_stale_shared_memory_in_every_order(schedule, wait, right):
    x = np.arange(64, dtype=np.float32)
    source = submission(TILE.replace("WAIT", wait), TILE_LAUNCH)
    result = compiled(source).run_batch([RunCase({"x": x}, {"out": ((64,), "float32")}, {})],
                                        schedule=schedule)[0]
    passes = result.outcome == "ok" and np.array_equal(result.outputs["out"], x[::-1])
    assert passes == right, (result.outcome, result.message)


# Thread 0 issues a copy and returns without a wait; thread 1 reads the destination. Without
# barriers the threads run one after the other, so in ascending order thread 1 runs after thread
# 0 has ended.
LEFT_PENDING = submission("""
    #include <cuda_pipeline.h>
    extern "C" __global__ void left(const float* x, float* out) {
        __shared__ float s[1];
        if (threadIdx.x == 0) {
            __pipeline_memcpy_async(s, x, 4);
            __pipeline_commit();
        } else {
            out[0] = s[0];
        }
    }
""", launch("left", [1], [2], ["x", "out"]))


def test_a_copy_left_pending_lands_when_its_thread_ends():
    result = compiled(LEFT_PENDING, False).run_batch(
        [RunCase({"x": X}, {"out": ((1,), "float32")}, {})], schedule="ascending")[0]
    assert result.outcome == "ok", result.message
    assert result.outputs["out"][0] == X[0]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_landing_at_the_threads_end_races_with_the_reader(schedule):
    result = compiled(LEFT_PENDING).run_batch([RunCase({"x": X}, {"out": ((1,), "float32")}, {})],
                                              schedule=schedule)[0]
    assert result.outcome == "data_race", result.message


def test_a_landed_copy_read_by_another_thread_without_a_barrier_is_a_race():
    source = submission(TILE.replace("WAIT", "__pipeline_wait_prior(0);").replace("__syncthreads();", ""),
                        TILE_LAUNCH)
    x = np.arange(64, dtype=np.float32)
    result = compiled(source).run({"x": x}, {"out": ((64,), "float32")}, {})
    assert result.outcome == "data_race", result.message


@pytest.mark.parametrize("call, says", [
    ("__pipeline_memcpy_async(&s[0], &x[0], 12);", "size_and_align is not 4, 8 or 16: 12"),
    ("__pipeline_memcpy_async(&s[1], &x[0], 8);", "the destination is not aligned to size_and_align: 8"),
    ("__pipeline_memcpy_async(&s[0], &x[1], 16);", "the source is not aligned to size_and_align: 16"),
    ("__pipeline_memcpy_async(&s[0], &x[0], 4, 5);", "zfill is larger than size_and_align: 5"),
    ("__pipeline_memcpy_async(out, &x[0], 4);", "the destination is not shared memory"),
])
def test_a_copy_cuda_would_refuse_is_a_crash_naming_it(call, says):
    source = submission(f"""
        #include <cuda_pipeline.h>
        extern "C" __global__ void bad(const float* x, float* out) {{
            __shared__ __align__(16) float s[8];
            {call}
            __pipeline_commit();
            __pipeline_wait_prior(0);
            out[0] = s[0];
        }}
    """, launch("bad", [1], [1], ["x", "out"]))
    result = compiled(source).run({"x": X}, {"out": ((1,), "float32")}, {})
    assert result.outcome == "crash", result.message
    assert says in result.stdout and "__pipeline_memcpy_async" in result.stdout


def test_zfill_fills_the_rest_of_the_copy_with_zeros():
    source = submission("""
        #include <cuda_pipeline.h>
        extern "C" __global__ void zfill(const float* x, float* out) {
            __shared__ __align__(16) float s[4];
            __pipeline_memcpy_async(s, x, 16, 8);
            __pipeline_commit();
            __pipeline_wait_prior(0);
            for (int k = 0; k < 4; k++) out[k] = s[k];
        }
    """, launch("zfill", [1], [1], ["x", "out"]))
    result = compiled(source).run({"x": X}, {"out": ((4,), "float32")}, {})
    assert result.outcome == "ok", result.message
    np.testing.assert_array_equal(result.outputs["out"], [1, 2, 0, 0])


def test_a_copy_into_dynamic_shared_memory_lands():
    source = submission("""
        #include <cuda_pipeline.h>
        extern "C" __global__ void dynamic(const float* x, float* out) {
            extern __shared__ float s[];
            __pipeline_memcpy_async(&s[threadIdx.x], &x[threadIdx.x], 4);
            __pipeline_commit();
            __pipeline_wait_prior(0);
            out[threadIdx.x] = s[threadIdx.x];
        }
    """, launch("dynamic", [1], [12], ["x", "out"], shared_bytes=48))
    result = compiled(source).run({"x": X}, {"out": ((12,), "float32")}, {})
    assert result.outcome == "ok", result.message
    np.testing.assert_array_equal(result.outputs["out"], X)


def test_nvrtc_compiles_the_real_header():
    assert ".entry steps(" in nvrtc_gate(STEPS).ptx
