"""A case's timeout counts the runner's CPU time: a runner the machine starves (here: stopped with
SIGSTOP, as a loaded machine's scheduler would leave it waiting) is given its time, up to a
wall-clock cap; a kernel that spins still times out after its CPU budget."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import numpy as np

import mutagym.runtime.cpu_backend as cpu_backend
from submission_text import compiled, launch, submission

#: Each case spins 1.6 * 10^8 times in all, about half a second of CPU here: a case is running when
#: the runner is stopped.
SPIN = submission('extern "C" __global__ void k(const float* x, float* out, int n) {\n'
                  '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                  '    volatile float acc = 0.0f;\n'
                  '    for (int j = 0; j < 40000; ++j) acc = acc + x[i];\n'
                  '    if (i < n) out[i] = acc;\n}\n', launch("k", ["ceil_div(n, 128)"], [128], ["x", "out", "n"]))


def _runners() -> set[int]:
    """Process ids of this process's kernel runners."""
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(name))
    return found


def _run_stopped(kernel, stop_s: float | None, timeout_s: float):
    """Run a batch of spins; stop its runner as soon as it appears, for *stop_s* (None: for good)."""
    n = 1 << 12
    cases = [cpu_backend.RunCase({"x": np.ones(n, np.float32)}, {"out": ((n,), "float32")}, {"n": n})] * 4
    box = {}
    before = _runners()
    thread = threading.Thread(target=lambda: box.setdefault("r", kernel.run_batch(cases, timeout_s=timeout_s)))
    thread.start()
    while not (new := _runners() - before) and thread.is_alive():
        time.sleep(0.001)
    assert len(new) == 1, new
    time.sleep(0.3)                # past loading: inside the first case
    for pid in new:
        os.kill(pid, signal.SIGSTOP)
    if stop_s is not None:
        time.sleep(stop_s)
        for pid in new:
            with contextlib.suppress(ProcessLookupError):    # killed for a timeout meanwhile
                os.kill(pid, signal.SIGCONT)
    thread.join()
    return box["r"]


def test_a_starved_runner_gets_its_cpu_time():
    """Stopped for three times the timeout inside a case, the runner still finishes every case."""
    kernel = compiled(SPIN)
    t0 = time.monotonic()
    results = _run_stopped(kernel, stop_s=3.0, timeout_s=1.0)
    assert time.monotonic() - t0 > 3.0
    assert [r.outcome for r in results] == ["ok"] * 4, [r.message for r in results]
    np.testing.assert_array_equal(results[3].outputs["out"], np.full(1 << 12, 40000, np.float32))


def test_a_runner_starved_past_the_cap_times_out_and_says_why(monkeypatch):
    monkeypatch.setattr(cpu_backend, "WALL_CAP_FACTOR", 3)
    t0 = time.monotonic()
    results = _run_stopped(compiled(SPIN), stop_s=None, timeout_s=0.5)
    timed_out = [r for r in results if r.outcome == "timeout"]    # the case running when it stopped
    assert timed_out and all(r.outcome == "ok" for r in results[:results.index(timed_out[0])]), results
    assert "no result within 1.5 s of wall-clock time" in timed_out[0].message
    assert "overloaded" in timed_out[0].message
    assert time.monotonic() - t0 < 30
