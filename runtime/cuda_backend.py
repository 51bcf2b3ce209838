"""Run a submission on a CUDA GPU through CuPy, with the same launch plan and outcomes as the CPU emulator.

How a case runs:

1. The parent resolves the submission's launch plan for the case (`resolve_plan`) and compiles its
   device text, what the emulator builds too, with NVRTC (`nvrtc_gate`, cached) to a cubin for the
   GPU's exact architecture, or to PTX for the newest virtual architecture NVRTC knows when it has
   no cubin target for that GPU.
2. A long-lived child process (a fresh interpreter; one per GPU per parent process, shared by
   every `CudaKernel`) loads the code with `cupy.RawModule(path=...)` and allocates every buffer
   with 256 canary bytes before and after it. Inputs are copied in; outputs and poisoned scratch
   are filled with the case's poison and the canaries with the poison of the positions they
   stand for, the very values the CPU emulator puts there (`buffers.Poison`: drawn per case and
   buffer from a digest of the case, NaN, large finite values of either sign, random bits);
   `init = "zero"` scratch is zeroed, `inout` outputs and filled buffers start as the emulator's
   do (`buffers.initial_bytes`), and bound `__constant__` arrays receive their inputs' bytes.
   This happens before every case. Kernels are looked up by NVRTC's lowered names, so C++
   linkage and template instantiations load as extern "C" kernels do.
3. Launches run in plan order, each followed by a device synchronisation and a canary check, so a
   fault names its launch. After the last launch every input is compared byte for byte with the
   host copy.

Outcomes (`RunResult.outcome`):

| what happened | outcome |
| --- | --- |
| all launches finished, canaries and inputs intact | `ok` |
| illegal or misaligned address | `memory_fault` |
| a canary byte changed (write past either end of a buffer) | `memory_fault` naming the buffer |
| an input's bytes changed | `memory_fault` ("kernel wrote to input 'x'") |
| trap, device assert, illegal instruction, launch failure, bad launch configuration | `crash` |
| still running after `timeout_s` (whole case) | `timeout`; the child is killed and restarted |

A CUDA error poisons the child's context, so the child exits after reporting it and the next case
starts a fresh one; the parent never touches CUDA contexts itself. A child that dies without a
report is restarted and the case retried once; a second death is a `crash`. Failures that are not
the kernel's (the module does not load, out of device memory, the worker does not start) raise
`InfrastructureError`.

Differences from the CPU emulator:

- There are no thread schedules on a GPU: `schedule` is validated (`ascending`, `descending`,
  `shuffled[:seed]`) and otherwise ignored.
- Reads past a buffer are not detected (there are no guard pages inside a CUDA allocation); a
  stray write is seen when it lands in a canary region or an input, or faults.
- Device `printf` output is not captured: the child's stdout goes to /dev/null and
  `RunResult.stdout` is always empty.
- `sync_error` and `forbidden_syscall` never occur: a divergent barrier is undefined behaviour
  that the hardware does not report, and device code cannot make system calls. Nor do `data_race`
  and `stateful_kernel`: a GPU has no race detector (a race shows, or not, in the values).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .buffers import Poison, case_digest, initial_bytes, numpy_dtype
from .cases import RunCase, parse_schedule
from .errors import InfrastructureError
from .nvrtc import nvrtc_supported_archs
from .nvrtc_gate import nvrtc_gate
from .plan import ResolvedPlan, resolve_plan
from .results import RunResult
from .submission import Submission, parse_submission

__all__ = ["CudaKernel", "cuda_available", "shutdown_workers", "CANARY_BYTES"]

#: Bytes of canary before and after every device buffer (the buffer's poison for those positions).
CANARY_BYTES = 256
#: Seconds a fresh child may take to import CuPy and create its context.
_STARTUP_TIMEOUT_S = 180.0
#: A child that has loaded this many modules retires after the case (CuPy keeps them loaded).
_MAX_MODULES = 256


@functools.cache
def cuda_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device; any failure means False (cached)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU"
        return False


# ----------------------------------------------------------------------------------------------
# What travels to the child: plain, picklable descriptions of one case.


@dataclass(frozen=True)
class _Buffer:
    name: str
    role: str
    nbytes: int
    itemsize: int
    fill: int | None  # 0 for zeroed scratch; None: `data` holds the contents, or poison when None
    data: bytes | None
    dtype: str = "uint8"
    digest: bytes = b""  # the case's poison seed (`buffers.case_digest`)

    def poison(self) -> Poison:
        return Poison(self.digest, self.name, self.dtype)


@dataclass(frozen=True)
class _Job:
    module_key: str
    image_kind: str  # "cubin" or "ptx"
    image: bytes
    buffers: tuple[_Buffer, ...]
    launches: tuple  # the plan's ResolvedLaunch objects, as they are
    symbols: tuple[tuple[str, str], ...] = ()    # (kernel or __constant__ array, NVRTC's lowered name)
    constants: tuple[tuple[str, bytes], ...] = ()  # (__constant__ array, the bytes it starts with)


def _build_job(plan: ResolvedPlan, case: RunCase, module_key: str, image_kind: str, image: bytes,
               symbols: dict[str, str] | None = None) -> _Job:
    buffers = []
    digest = case_digest(plan.buffers, case.inputs)
    for spec in plan.buffers:
        data = fill = None
        if spec.init == "data":
            data = np.ascontiguousarray(case.inputs[spec.name]).tobytes()
        elif spec.init == "zero":
            fill = 0
        elif spec.init in ("copy", "fill"):
            data = initial_bytes(spec, Poison(digest, spec.name, spec.dtype), case.inputs).tobytes()
        buffers.append(_Buffer(spec.name, spec.role, spec.nbytes, numpy_dtype(spec.dtype).itemsize,
                               fill, data, spec.dtype, digest))
    constants = tuple((c.symbol, np.ascontiguousarray(case.inputs[c.input]).tobytes())
                      for c in plan.constants)
    return _Job(module_key, image_kind, image, tuple(buffers), tuple(plan.launches),
                tuple((symbols or {}).items()), constants)


# ----------------------------------------------------------------------------------------------
# The child process. Everything here runs with CuPy imported and a CUDA context current.

_FAULTS = {
    "illegaladdress": "memory_fault", "misalignedaddress": "memory_fault",
    "invalidaddressspace": "memory_fault", "launchtimeout": "timeout",
}


def _classify_cuda_error(message: str) -> str:
    """Outcome for a CUDA error message (driver `CUDA_ERROR_X` or runtime `cudaErrorX` form).

    >>> _classify_cuda_error("cudaErrorIllegalAddress: an illegal memory access was encountered")
    'memory_fault'
    >>> _classify_cuda_error("CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address")
    'memory_fault'
    >>> _classify_cuda_error("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")
    'crash'
    """
    name = message.split(":", 1)[0].strip().lower().replace("_", "")
    name = name.removeprefix("cudaerror")
    return _FAULTS.get(name, "crash")


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _value_arg(raw: bytes):
    """A by-value kernel argument holding exactly *raw* (the plan packs scalars of 1 to 8 bytes).

    CuPy hands the driver a pointer to the scalar's bytes and the driver copies as many as the
    parameter has, so an unsigned integer of the same size carries any type's bits unchanged.
    """
    return np.frombuffer(raw, dtype=_UNSIGNED[len(raw)])[0]


def _load_module(cupy, folder: str, modules: dict, job: _Job) -> dict:
    kernels = modules.get(job.module_key)
    if kernels is None:
        # CuPy memoizes modules by path, so the path carries the content hash.
        path = os.path.join(folder, f"{job.module_key}.{job.image_kind}")
        with open(path, "wb") as handle:
            handle.write(job.image)
        module = cupy.RawModule(path=path)
        lowered = dict(job.symbols)
        kernels = {launch.kernel: module.get_function(lowered[launch.kernel]) for launch in job.launches}
        modules[job.module_key] = kernels = (module, kernels)
    return kernels


def _copy_constants(cupy, module, job: _Job) -> None:
    """Each bound `__constant__` array receives its input's bytes; a smaller array is the kernel's
    fault (it cannot hold the input), reported as the emulator reports it."""
    lowered = dict(job.symbols)
    for symbol, data in job.constants:
        target = module.get_global(lowered[symbol])
        if target.mem.size < len(data):
            raise _ConstantTooSmall(f"__constant__ {symbol!r} holds {target.mem.size} bytes; its "
                                    f"input has {len(data)}")
        target.copy_from_host(np.frombuffer(data, np.uint8).ctypes.data, len(data))


class _ConstantTooSmall(Exception):
    pass


def _canary_fault(cupy, device: dict, buffers: Sequence[_Buffer], canaries: dict) -> str | None:
    """Describe the first changed canary byte, in the CPU emulator's words, or None. `canaries`
    maps a buffer to the (head, tail) bytes it was given."""
    for buf in buffers:
        whole = device[buf.name]
        count = buf.nbytes // buf.itemsize
        before, after = canaries[buf.name]
        tail = np.flatnonzero(cupy.asnumpy(whole[CANARY_BYTES + buf.nbytes:]) != after)
        if tail.size:
            element = (buf.nbytes + int(tail[0])) // buf.itemsize
            return f"write past the end of {buf.role} '{buf.name}' (element {element}, size {count})"
        head = np.flatnonzero(cupy.asnumpy(whole[:CANARY_BYTES]) != before)
        if head.size:
            return (f"write before the start of {buf.role} '{buf.name}' "
                    f"({CANARY_BYTES - int(head[0])} bytes before)")
    return None


def _host_image(buf: _Buffer) -> np.ndarray:
    """A buffer's initial bytes with its canaries: the poison before it, its contents (the input,
    zeros, or its poison), the poison after it."""
    poison = buf.poison()
    host = np.empty(buf.nbytes + 2 * CANARY_BYTES, dtype=np.uint8)
    host[:CANARY_BYTES] = poison.before(CANARY_BYTES)
    host[CANARY_BYTES + buf.nbytes:] = poison.after(CANARY_BYTES)
    inner = host[CANARY_BYTES:CANARY_BYTES + buf.nbytes]
    if buf.data is not None:
        inner[:] = np.frombuffer(buf.data, dtype=np.uint8)
    elif buf.fill is not None:
        inner[:] = buf.fill
    else:
        inner[:] = poison.data(buf.nbytes)
    return host


def _execute(cupy, folder: str, modules: dict, job: _Job, conn) -> tuple[tuple, bool]:
    """Run one case; return (reply, must_exit), the reply without its exiting flag."""
    cuda_errors = tuple(err for err in (getattr(cupy.cuda.driver, "CUDADriverError", None),
                                        getattr(cupy.cuda.runtime, "CUDARuntimeError", None)) if err)
    current = None
    try:
        module, kernels = _load_module(cupy, folder, modules, job)
        _copy_constants(cupy, module, job)
        device, canaries = {}, {}
        for buf in job.buffers:
            host = _host_image(buf)
            canaries[buf.name] = (host[:CANARY_BYTES].copy(), host[CANARY_BYTES + buf.nbytes:].copy())
            device[buf.name] = cupy.asarray(host)
        for launch in job.launches:
            current = launch
            conn.send(("launching", launch.index, launch.kernel))
            kernel = kernels[launch.kernel]
            args = tuple(np.uint64(device[arg.base].data.ptr + CANARY_BYTES + arg.byte_offset)
                         if arg.kind == "buffer" else _value_arg(arg.value) for arg in launch.args)
            kernel(launch.grid, launch.block, args, shared_mem=launch.shared_bytes)
            cupy.cuda.runtime.deviceSynchronize()
            fault = _canary_fault(cupy, device, job.buffers, canaries)
            if fault:
                return ("fault", "memory_fault",
                        f"{fault} in launch {launch.index} (kernel {launch.kernel!r})"), False
        for buf in job.buffers:
            if buf.role != "input":
                continue
            now = cupy.asnumpy(device[buf.name][CANARY_BYTES:CANARY_BYTES + buf.nbytes])
            changed = np.flatnonzero(now != np.frombuffer(buf.data, dtype=np.uint8))
            if changed.size:
                return ("fault", "memory_fault",
                        f"kernel wrote to input '{buf.name}' (element {int(changed[0]) // buf.itemsize} "
                        "changed): inputs are read-only"), False
        outputs = {buf.name: cupy.asnumpy(device[buf.name][CANARY_BYTES:CANARY_BYTES + buf.nbytes]
                                          ).tobytes()
                   for buf in job.buffers if buf.role == "output"}
        return ("ok", outputs), False
    except _ConstantTooSmall as err:
        return ("fault", "memory_fault", str(err)), False
    except cuda_errors as err:
        if current is None:  # loading the module or allocating: not the kernel's doing
            return ("infra", f"CUDA failed before the first launch: {err}"), True
        return ("fault", _classify_cuda_error(str(err)),
                f"launch {current.index} (kernel {current.kernel!r}): {err}"), True
    except Exception:  # noqa: BLE001 - reported to the parent as an infrastructure failure
        return ("infra", traceback.format_exc()), True


#: Run by `python -c` in the child: take the parent's import path, then enter `_child_main`.
_BOOTSTRAP = (
    "import importlib, json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "importlib.import_module(sys.argv[2])._child_main(*map(int, sys.argv[3:6]))"
)


def _child_main(fd: int, device_id: int, parent_pid: int) -> None:
    """Entry point of the GPU worker process: serve cases on the socket *fd* until told to stop."""
    from multiprocessing.connection import Connection

    conn = Connection(fd)

    def orphan_watch() -> None:  # the parent died without stopping us: leave, even mid-kernel
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=orphan_watch, daemon=True).start()
    try:
        import cupy
        device = cupy.cuda.Device(device_id)
        device.use()
        cupy.empty(1, dtype=cupy.uint8)  # create the context now, not during the first case
        name = cupy.cuda.runtime.getDeviceProperties(device_id)["name"]
        name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        capability = int(device.compute_capability)
    except BaseException as err:  # noqa: BLE001 - reported, then we exit
        conn.send(("error", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", capability, name))
    folder = tempfile.mkdtemp(prefix="mutagym-cuda-")
    modules: dict = {}
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message[0] != "run":
                break
            reply, must_exit = _execute(cupy, folder, modules, message[1], conn)
            must_exit = must_exit or len(modules) >= _MAX_MODULES
            conn.send((reply[0], must_exit, *reply[1:]))
            if must_exit:
                break
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)  # skip CuPy's exit handlers: the context may be poisoned


# ----------------------------------------------------------------------------------------------
# The parent's handle on one child.


class _WorkerDied(Exception):
    pass


class _Worker:
    """One GPU child process for one device, started on demand and restarted after faults.

    The child is a fresh interpreter (`subprocess`, not `fork`: CUDA state must never be
    inherited, and not multiprocessing's "spawn", which re-imports the caller's `__main__` and so
    breaks scripts without an `if __name__ == "__main__"` guard). It talks over a socket pair
    wrapped in `multiprocessing.connection.Connection`, runs in its own session (a Ctrl-C aimed at
    the parent does not kill a case half-way) and leaves by itself if the parent dies.
    """

    def __init__(self, device: int):
        self.device = device
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.capability: int | None = None
        self.name = ""
        self._proc: subprocess.Popen | None = None
        self._conn = None

    def ensure_started(self) -> None:
        from multiprocessing.connection import Connection

        if self._proc is not None and self._proc.poll() is None:
            return
        self.stop()
        ours, theirs = socket.socketpair()
        path = json.dumps([str(p) or os.getcwd() for p in sys.path])
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, path, __name__, str(theirs.fileno()),
                 str(self.device), str(os.getpid())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # device printf is not captured
                start_new_session=True)
        finally:
            theirs.close()
        self._proc, self._conn = proc, Connection(ours.detach())
        try:
            if not self._conn.poll(_STARTUP_TIMEOUT_S):
                raise InfrastructureError(f"the GPU worker for device {self.device} did not start "
                                          f"within {_STARTUP_TIMEOUT_S:g} s")
            message = self._conn.recv()
        except (EOFError, OSError):
            message = ("error", "it exited while starting; its traceback is on stderr above")
        except InfrastructureError:
            self.stop(kill=True)
            raise
        if message[0] != "ready":
            self.stop(kill=True)
            raise InfrastructureError(f"the GPU worker for device {self.device} could not start: "
                                      f"{message[1]} (is the `cuda` extra installed and a GPU visible?)")
        _, self.capability, self.name = message

    def stop(self, *, kill: bool = False) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if proc is None:
            return
        if not kill:
            try:
                conn.send(("stop",))
                proc.wait(5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass  # already gone, or stuck: killed below
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        conn.close()

    def run(self, job: _Job, timeout_s: float) -> RunResult:
        """Run one case in the child; raise _WorkerDied if it vanished without a report."""
        conn = self._conn
        try:
            conn.send(("run", job))
        except (OSError, ValueError) as err:
            self.stop(kill=True)
            raise _WorkerDied(f"could not send the case: {err}") from None
        deadline = time.monotonic() + timeout_s
        where = "before the first launch"  # the child reports each launch as it starts it
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not conn.poll(remaining):
                self.stop(kill=True)
                return RunResult("timeout", message=f"no result within {timeout_s:g} s {where} (an "
                                 "infinite loop, or a launch too large to finish); the GPU worker "
                                 "was killed and restarted")
            try:
                message = conn.recv()
            except (EOFError, OSError):
                proc = self._proc
                self.stop(kill=True)
                raise _WorkerDied(f"exit code {proc.returncode} {where}") from None
            kind = message[0]
            if kind == "launching":
                where = f"in launch {message[1]} (kernel {message[2]!r})"
                continue
            exiting, payload = message[1], message[2:]
            if exiting:  # the child exits after this reply (CUDA fault, module limit): reap it
                self.stop()
            if kind == "ok":
                return RunResult("ok", outputs=payload[0])
            if kind == "fault":
                return RunResult(payload[0], message=payload[1])
            raise InfrastructureError(f"the GPU worker failed (not the kernel's fault):\n{payload[0]}")


_WORKERS: dict[int, _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _worker(device: int) -> _Worker:
    with _WORKERS_LOCK:
        worker = _WORKERS.get(device)
        if worker is None or worker.pid != os.getpid():  # a forked copy must not share pipes
            worker = _WORKERS[device] = _Worker(device)
        return worker


@atexit.register
def shutdown_workers() -> None:
    """Stop every GPU worker this process started (also runs at interpreter exit)."""
    with _WORKERS_LOCK:
        workers = [w for w in _WORKERS.values() if w.pid == os.getpid()]
        _WORKERS.clear()
    for worker in workers:
        with worker.lock:
            worker.stop()


# ----------------------------------------------------------------------------------------------


class CudaKernel:
    """A submission ready to run on a CUDA GPU; see the module docstring for the semantics.

    Args:
        submission: a parsed `Submission`, or its source text.
        device: the CUDA device ordinal.

    Raises:
        CompileError: NVRTC rejects the text (checked here, without a GPU).

    Example (needs a GPU and CuPy)::

        kernel = CudaKernel(source)
        [result] = kernel.run_batch([RunCase(inputs={"x": x}, outputs={"out": ((n,), "float32")},
                                             dims={"n": n})])
        result.outcome, result.outputs["out"]
    """

    def __init__(self, submission: Submission | str, *, device: int = 0):
        if isinstance(submission, str):
            submission = parse_submission(submission)
        self.submission = submission
        self.device = device
        nvrtc_gate(submission)  # the compile gate, cached
        self._images: dict[int, tuple[str, str, bytes]] = {}

    def _image(self, capability: int) -> tuple[str, str, bytes, dict[str, str]]:
        """(module key, kind, bytes, symbols) of the code for a GPU of this compute capability;
        *symbols* maps each launched kernel and bound `__constant__` array to its lowered name."""
        if capability not in self._images:
            supported = nvrtc_supported_archs()
            if capability in supported:
                arch = f"sm_{capability}"
                compiled = nvrtc_gate(self.submission, arch=arch)
                kind, image = "cubin", compiled.cubin
            else:
                older = [a for a in supported if a <= capability]
                if not older:
                    raise InfrastructureError(
                        f"NVRTC supports architectures {supported}, none usable on compute "
                        f"capability {capability}; install a matching nvidia-cuda-nvrtc")
                arch = f"compute_{max(older)}"
                compiled = nvrtc_gate(self.submission, arch=arch)
                kind, image = "ptx", compiled.ptx.encode()
            self._images[capability] = (f"{self.submission.sha256}-{arch}", kind, image, compiled.lowered)
        return self._images[capability]

    def run_batch(self, cases: Sequence[RunCase], *, schedule: str = "ascending",
                  timeout_s: float = 10.0) -> list[RunResult]:
        """Run every case in order and return one `RunResult` per case.

        *schedule* is checked (`ascending`, `descending`, `shuffled[:seed]`) and then ignored: a
        GPU has no thread order to choose. *timeout_s* bounds each case (all its launches) that
        has no `RunCase.timeout_s` of its own.

        Raises:
            LaunchError: the plan does not fit a case; raised before anything runs.
            InfrastructureError: no GPU or CuPy, the worker cannot start, or CUDA fails in a way
                that is not the kernel's fault.
            ValueError: an unknown schedule or a non-positive timeout.
        """
        parse_schedule(schedule)
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        plans = [resolve_plan(self.submission, case.inputs, case.outputs, case.dims, case.scalars)
                 for case in cases]
        if not plans:
            return []
        if not cuda_available():
            raise InfrastructureError("no CUDA GPU visible to CuPy; run on a GPU machine with "
                                      "`pip install 'mutagym[cuda]'`, or use the CPU backend")
        worker = _worker(self.device)
        results = []
        for case, plan in zip(cases, plans):
            with worker.lock:
                worker.ensure_started()
                key, kind, image, symbols = self._image(worker.capability)
                job = _build_job(plan, case, key, kind, image, symbols)
                results.append(self._run_one(worker, job, plan, timeout_s if case.timeout_s is None
                                             else case.timeout_s))
        return results

    @staticmethod
    def _run_one(worker: _Worker, job: _Job, plan: ResolvedPlan, timeout_s: float) -> RunResult:
        try:
            result = worker.run(job, timeout_s)
        except _WorkerDied:
            worker.ensure_started()  # one retry in a fresh child: a dead worker is not a verdict
            try:
                result = worker.run(job, timeout_s)
            except _WorkerDied as died:
                return RunResult("crash", message=f"the GPU worker died twice running this case ({died})")
        if result.ok:
            specs = {spec.name: spec for spec in plan.buffers}
            result.outputs = {
                name: np.frombuffer(bytearray(raw), dtype=numpy_dtype(specs[name].dtype))
                        .reshape(tuple(specs[name].shape))
                for name, raw in result.outputs.items()}
        return result
