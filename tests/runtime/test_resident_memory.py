"""Device memory kept between batches: a kill matrix runs thousands of kernels on the same cases,
so the CPU backend keeps the last few batches' memfds while its inputs are frozen (read-only arrays that
nothing can change) and only resets outputs and scratch for the next batch. Reuse must never show:
a kept batch gives the same results as a fresh one, and different or writable inputs are copied in.
"""

from __future__ import annotations

import numpy as np

from mutagym.runtime import RunCase
from mutagym.runtime import cpu_backend
from mutagym.runtime.buffers import DeviceMemory, Poison, frozen, initial_output, run_case_digest
from mutagym.runtime.plan import BufferSpec, ResolvedPlan
from submission_text import compiled, submission

SCALE = submission("""
    extern "C" __global__ void scale(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2.0f * x[i];
    }
""", {"kernel": "scale", "grid": ["ceil_div(n, 64)"], "block": [64], "args": ["x", "y", "n"]})

# Writes only the first half of y: whatever a kept memory left in the second half must not show.
HALF = SCALE.replace("if (i < n)", "if (i < n / 2)")


def read_only(values) -> np.ndarray:
    array = np.array(values, dtype=np.float32)
    array.flags.writeable = False
    return array


def cases(x: np.ndarray) -> list[RunCase]:
    return [RunCase({"x": x}, {"y": (x.shape, "float32")}, {"n": x.size})]


def test_frozen_means_nothing_can_change_the_contents():
    writable = np.zeros(4, np.float32)
    view = writable.view()
    view.flags.writeable = False
    assert not frozen(writable)
    assert not frozen(view)                         # its base can still be written
    assert frozen(read_only([1, 2]))
    assert frozen(read_only([1, 2, 3, 4])[1:])
    assert frozen(np.frombuffer(bytes(16), np.float32))
    over_bytearray = np.frombuffer(bytearray(16), np.float32)
    over_bytearray.flags.writeable = False
    assert not frozen(over_bytearray)


def test_a_batch_on_the_same_frozen_inputs_reuses_the_memory_and_resets_outputs():
    x = read_only(np.arange(100))
    first = compiled(SCALE).run_batch(cases(x))[0]
    kept = cpu_backend._resident.kept[-1]
    assert kept is not None
    second = compiled(HALF).run_batch(cases(x))[0]
    assert cpu_backend._resident.kept[-1] is kept          # no new memfd, no copy of the inputs
    np.testing.assert_array_equal(first.outputs["y"], 2 * np.arange(100, dtype=np.float32))
    np.testing.assert_array_equal(second.outputs["y"][:50], 2 * np.arange(50, dtype=np.float32))
    poison = initial_output(cases(x)[0], "y")[50:]       # poison again, not the first kernel's values
    assert second.outputs["y"][50:].tobytes() == poison.tobytes()


def test_other_frozen_inputs_of_the_same_shape_are_copied_in():
    compiled(SCALE).run_batch(cases(read_only(np.arange(100))))
    result = compiled(SCALE).run_batch(cases(read_only(np.full(100, 7))))[0]
    np.testing.assert_array_equal(result.outputs["y"], np.full(100, 14, np.float32))


def test_writable_inputs_are_not_kept_and_their_changes_show():
    x = np.arange(100, dtype=np.float32)
    compiled(SCALE).run_batch(cases(x))
    assert all(m.inputs[0].get("x") is not x for m in cpu_backend._resident.kept)   # earlier tests' may hold others
    x[:] = 3
    result = compiled(SCALE).run_batch(cases(x))[0]
    np.testing.assert_array_equal(result.outputs["y"], np.full(100, 6, np.float32))


# Out of bounds by one on either side of y, where the emulator cannot fault (the unused head of
# y's first page, and the slack of its last 16-byte slot when n is not a multiple of 4).
SCRIBBLE = submission("""
    extern "C" __global__ void scribble(const float* x, float* y, int n) {
        if (blockIdx.x == 0 && threadIdx.x == 0) { y[-1] = 42.0f; y[n] = 43.0f; }
    }
""", {"kernel": "scribble", "grid": [1], "block": [1], "args": ["x", "y", "n"]})
PEEK = submission("""
    extern "C" __global__ void peek(const float* x, float* y, int n) {
        if (blockIdx.x == 0 && threadIdx.x == 0) { y[0] = y[-1]; y[1] = y[n]; }
    }
""", {"kernel": "peek", "grid": [1], "block": [1], "args": ["x", "y", "n"]})


def test_what_a_kernel_wrote_out_of_bounds_does_not_reach_the_next_kernel():
    x = read_only(np.arange(99))
    fresh = compiled(PEEK).run_batch(cases(x))[0]
    scribbled = compiled(SCRIBBLE).run_batch(cases(x))[0]
    assert scribbled.ok
    kept = cpu_backend._resident.kept[-1]
    after = compiled(PEEK).run_batch(cases(x))[0]
    assert cpu_backend._resident.kept[-1] is kept
    around = Poison(run_case_digest(cases(x)[0]), "y", "float32")   # y[-1] and y[n]: the poison
    want = np.concatenate([around.before(4), around.after(4)]).view(np.float32)
    assert after.outputs["y"][:2].tobytes() == want.tobytes()
    np.testing.assert_array_equal(after.outputs["y"], fresh.outputs["y"])


def test_alternating_batches_each_keep_their_memory():
    """A kill matrix task runs every input, then the cheap ones: both stay kept, neither is rebuilt."""
    every, cheap = read_only(np.arange(100)), read_only(np.arange(30))
    kernel = compiled(SCALE)
    kernel.run_batch(cases(every))
    kernel.run_batch(cases(cheap))
    kept = {m.inputs[0]["x"] is every: m for m in cpu_backend._resident.kept[-2:]}
    for _ in range(2):
        result = kernel.run_batch(cases(every))[0]
        assert cpu_backend._resident.kept[-1] is kept[True]
        np.testing.assert_array_equal(result.outputs["y"], 2 * np.arange(100, dtype=np.float32))
        result = kernel.run_batch(cases(cheap))[0]
        assert cpu_backend._resident.kept[-1] is kept[False]
        np.testing.assert_array_equal(result.outputs["y"], 2 * np.arange(30, dtype=np.float32))


def test_the_least_recently_used_batches_are_closed_past_the_count_or_byte_bound(monkeypatch):
    kernel = compiled(SCALE)
    inputs = [read_only(np.arange(10 + i)) for i in range(cpu_backend._ResidentMemory.MAX_KEPT + 1)]
    for x in inputs:
        kernel.run_batch(cases(x))
    kept = cpu_backend._resident.kept
    assert [m.inputs[0]["x"] for m in kept] == inputs[1:]
    oldest = kept[0]
    monkeypatch.setattr(cpu_backend._ResidentMemory, "MAX_KEPT_BYTES", kept[-1].nbytes)
    kernel.run_batch(cases(inputs[-1]))
    assert cpu_backend._resident.kept == [kept[-1]]
    assert oldest.map.closed


def plan_of_every_init() -> tuple[ResolvedPlan, dict[str, np.ndarray]]:
    """One buffer per `init` kind, sizes not a multiple of 16 so that every slot has slack."""
    x = read_only(np.arange(37))
    spec = lambda name, role, init, **kw: BufferSpec(name, role, "float32", (37,), 148, init, **kw)
    return ResolvedPlan((spec("x", "input", "data"), spec("y", "output", "poison"),
                         spec("c", "output", "copy", source="x"), spec("z", "scratch", "zero"),
                         spec("p", "scratch", "poison"), spec("f", "scratch", "fill", fill=b"\x01\x02\x03\x04")),
                        ()), {"x": x}


def test_a_reset_gives_the_bytes_of_a_fresh_layout_for_every_init_kind():
    plan, inputs = plan_of_every_init()
    fresh, used = DeviceMemory([plan, plan], [inputs, inputs]), DeviceMemory([plan, plan], [inputs, inputs])
    try:
        writable = [p.region for case in used.placements for p in case.values() if p.role != "input"]
        assert len(writable) == 10
        for start, stop in writable:                   # everything a kernel could write, scribbled
            used.map[start:stop] = bytes(range(256)) * ((stop - start) // 256)
        assert bytes(used.map) != bytes(fresh.map)
        used.reset()
        assert bytes(used.map) == bytes(fresh.map)
        used.reset()                                   # and again: the kept copy is not consumed
        assert bytes(used.map) == bytes(fresh.map)
    finally:
        fresh.close()
        used.close()
