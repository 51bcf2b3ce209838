"""Compile a submission with NVRTC (CUDA's runtime compiler) to PTX, and to a cubin for a real GPU.

NVRTC needs no GPU: it is the compile gate (a mutant counts as compilable only if NVRTC accepts it)
and it builds the code the `cuda` backend loads. The library comes from the `nvidia-cuda-nvrtc`
wheel through `cuda-bindings`; `cuda_fp16.h` and `cuda_bf16.h` come from `nvidia-cuda-runtime`.

The text goes through `prepare_for_nvrtc` first, so error lines are the submission's own lines.
Results (and rejections) are cached in-process by (source hash, arch, name).

NVRTC reads the policy's text, and a 1 KB preprocessor bomb keeps it busy for hours in tens of
GB, so the compile never runs in this process: a helper process (`nvrtc_child.py`, one per
process, started on first use, restarted if it dies) keeps libnvrtc loaded and forks one child per
compile under `NVRTC_LIMITS`. Calls from many threads run at once, each in its own child. A limit
hit is a CompileError naming it; logs and messages are redacted (`redact.redact_log`).
`nvrtc_version` and `nvrtc_supported_archs` read no text and stay in this process.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import nvrtc_child
from .bounded import Limits, limit_error
from .errors import CompileError, InfrastructureError
from .redact import redact_log
from .source_prep import prepare_for_nvrtc

__all__ = ["NvrtcResult", "nvrtc_compile", "nvrtc_version", "nvrtc_supported_archs",
           "nvrtc_library_paths", "cuda_include_dir", "compile_options"]

_INSTALL_HINT = "pip install cuda-bindings nvidia-cuda-nvrtc"
_HEADERS_HINT = "pip install nvidia-cuda-runtime"
_CCCL_HINT = "pip install nvidia-cuda-cccl"
_CRT_HINT = "pip install nvidia-cuda-crt"

#: Limits of one compile. Measured (this machine, NVRTC 13.0, compiles in a forked child as
#: here): the 145 substrates take 0.04-0.16 s of CPU for sm_90, and the child's address space
#: peaks within 5 MB of the helper's own ~190 MB (Python and libnvrtc mapped). 1 GiB is five
#: times that; below ~150 MB NVRTC reports "out of memory". 10 s of CPU is sixty times the
#: slowest substrate; the wall clock allows a loaded machine three times that. The 1 KB bomb of
#: issue 13 (66 s and 1.35 GB in process) stops at the CPU limit, its memory still under 1 GiB.
#: Read at each compile, so a test may patch them; `file_bytes` is unused (NVRTC writes no files).
NVRTC_LIMITS = Limits(wall_s=30.0, cpu_s=10, memory_bytes=1 << 30, file_bytes=1 << 20)
#: How long past its own wall limit a compile may take before the helper counts as hung.
_HELPER_GRACE_S = 30.0
#: How long the helper may take to start (import cuda.bindings, load libnvrtc, warm up).
_HELPER_START_S = 120.0

#: `submission.cu(12): error: identifier "x" is undefined` (also `catastrophic error`).
_ERROR_LINE = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<text>.*)$")
_ANY_ERROR = re.compile(r"^(?:.*: )?(?:catastrophic )?error: (?P<text>.*)$")
#: NVRTC's own words when an allocation fails under the address-space limit.
_OUT_OF_MEMORY = re.compile(r"^\S*(?:\(\d+\))?: catastrophic error: out of memory\s*$", re.MULTILINE)


@dataclass(frozen=True)
class NvrtcResult:
    """What NVRTC produced for one source and arch.

    `ptx` is always present; `cubin` only for a real architecture (`sm_XX`), empty for a virtual
    one (`compute_XX`). `log` holds NVRTC's warnings, `seconds` the wall time of the compile that
    filled the cache. `lowered` maps each name asked for (a kernel, a template kernel's
    instantiation `f<8>`, a `__constant__` array) to its symbol in the code.
    """

    ptx: str
    log: str
    seconds: float
    arch: str = "compute_80"
    cubin: bytes = field(default=b"", repr=False)
    lowered: dict[str, str] = field(default_factory=dict, compare=False)


def _nvrtc_module():
    try:
        from cuda.bindings import nvrtc
    except ImportError as err:  # pragma: no cover - cuda-bindings is a hard dependency
        raise InfrastructureError(f"cuda-bindings is not importable ({err}); {_INSTALL_HINT}") from err
    return nvrtc


def _call(fn, *args):
    """Call an NVRTC binding, turning a missing libnvrtc into an InfrastructureError."""
    try:
        return fn(*args)
    except RuntimeError as err:  # cuda.pathfinder.DynamicLibNotFoundError is a RuntimeError
        raise InfrastructureError(
            f"libnvrtc could not be loaded ({type(err).__name__}: {err}); {_INSTALL_HINT}") from err


def _check(result, what: str):
    """Unpack `(err, *values)` from a binding; any error other than success is ours, not the kernel's."""
    err, *values = result
    if int(err) != 0:
        nvrtc = _nvrtc_module()
        _, name = nvrtc.nvrtcGetErrorString(err)
        raise InfrastructureError(f"{what} failed: {name.decode(errors='replace')}")
    return values[0] if len(values) == 1 else values


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor) version; raises InfrastructureError when libnvrtc cannot be loaded."""
    nvrtc = _nvrtc_module()
    major, minor = _check(_call(nvrtc.nvrtcVersion), "nvrtcVersion")
    return int(major), int(minor)


@functools.cache
def nvrtc_supported_archs() -> tuple[int, ...]:
    """The real architectures this NVRTC can build cubins for, e.g. (75, 80, ..., 90, 100, 120)."""
    nvrtc = _nvrtc_module()
    archs = _check(_call(nvrtc.nvrtcGetSupportedArchs), "nvrtcGetSupportedArchs")
    return tuple(int(a) for a in archs)


@functools.cache
def nvrtc_library_paths() -> tuple[str, ...]:
    """Absolute paths of libnvrtc and its builtins library, as this process resolves them.

    The helper runs `python -I -S`, and in a virtualenv it is `site` that points `sys.prefix`
    at the venv: the helper's own search would never look in the venv's site-packages. So the
    judge resolves the libraries here (where `cuda.pathfinder` sees what the user installed)
    and the helper loads exactly these files before `cuda.bindings` looks for them. Raises
    InfrastructureError when libnvrtc cannot be found."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        found = Path(load_nvidia_dynamic_lib("nvrtc").abs_path)
    except ImportError as err:  # pragma: no cover - cuda-bindings depends on cuda-pathfinder
        raise InfrastructureError(f"cuda.pathfinder is not importable ({err}); {_INSTALL_HINT}") from err
    except RuntimeError as err:  # DynamicLibNotFoundError is a RuntimeError
        raise InfrastructureError(
            f"libnvrtc could not be loaded ({type(err).__name__}: {err}); {_INSTALL_HINT}") from err
    real = found.resolve()
    # NVRTC dlopens libnvrtc-builtins.so.<major>.<minor> by name when it compiles; beside a
    # wheel's library that name is not on the loader's path, so it is loaded first, by path.
    builtins = sorted(str(b) for b in real.parent.glob("libnvrtc-builtins.so.*") if b.is_file())
    return (*builtins, str(real))


@functools.cache
def cuda_include_dir() -> Path | None:
    """Folder that holds `cuda_fp16.h` (from the `nvidia-cuda-runtime` wheel), or None."""
    try:
        import nvidia
        roots = [Path(p) for p in nvidia.__path__]
    except ImportError:
        roots = []
    for root in roots:
        for sub in ("cu13/include", "cu12/include", "cuda_runtime/include"):
            if (root / sub / "cuda_fp16.h").is_file():
                return root / sub
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        found = find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001 - any failure just means "not found"
        found = None
    if found and (Path(found) / "cuda_fp16.h").is_file():
        return Path(found)
    return None


def compile_options(arch: str) -> list[bytes]:
    """The NVRTC options mutagym compiles with for *arch* (`compute_80`, `sm_90`, ...).

    Besides the CUDA headers' folder, its `cccl/` subfolder when the `nvidia-cuda-cccl` wheel put
    CUDA's C++ library there: `cooperative_groups.h` includes `<cuda/std/...>` from it."""
    options = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
    for include in (cuda_include_dir(), _cccl_include_dir()):
        if include is not None:
            options.append(b"-I" + str(include).encode())
    return options


def _has_crt_mma() -> bool:
    """Whether `crt/mma.h` is beside the CUDA headers: the runtime wheel has `mma.h` without it."""
    include = cuda_include_dir()
    return include is not None and (include / "crt" / "mma.h").is_file()


def _cccl_include_dir() -> Path | None:
    """The `cccl/` folder beside the CUDA headers (`cuda/std/...`), or None."""
    include = cuda_include_dir()
    return include / "cccl" if include is not None and (include / "cccl" / "cuda").is_dir() else None


@dataclass(frozen=True)
class _Job:
    """Cache key: the hash, arch and name; the text rides along without taking part in eq/hash."""

    sha256: str
    arch: str
    name: str
    source: str = field(compare=False, repr=False)
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Rejected:
    message: str
    line: int | None
    log: str


def _first_error(log: str, name: str) -> tuple[str, int | None]:
    """The first error's text and, when it lies in the submission itself, its line."""
    for raw in log.splitlines():
        match = _ERROR_LINE.match(raw)
        if match:
            line = int(match["line"]) if match["file"] == name else None
            where = "" if line is not None else f" (in {match['file']}, line {match['line']})"
            return match["text"] + where, line
        match = _ANY_ERROR.match(raw)
        if match:
            return match["text"], None
    return (log.strip().splitlines() or ["no log"])[0], None


class _Helper:
    """One running helper process, and the compiles waiting for its answers.

    Requests are written whole under a lock of their own; a reader thread hands each answer to
    the thread that waits for it, by request id. When the helper's output ends, every waiting compile hears
    `None` (the helper died) and the helper is replaced on the next call."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="mg-nvrtc-"))  # 0700
        self.lock = threading.Lock()          # guards `waiting` and `alive`
        self.write_lock = threading.Lock()    # one request written at a time
        self.ids = itertools.count(1)
        self.waiting: dict[bytes, list] = {}   # id -> [event, answer]
        self.alive = True
        with open(self.folder / "helper.err", "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", nvrtc_child.__file__, json.dumps(sys.path),
                 json.dumps(nvrtc_library_paths())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=self.folder,
                env=_helper_env(), start_new_session=True, close_fds=True)
        ready = self._first_frame()
        if ready is None or ready[0] != b"ready":
            self.close()
            why = (ready[1].decode(errors="replace") if ready and len(ready) > 1
                   else "it exited or did not answer")
            raise InfrastructureError(f"libnvrtc could not be loaded in the NVRTC helper ({why}); {_INSTALL_HINT}")
        self.reader = threading.Thread(target=self._read, name="mutagym-nvrtc-helper", daemon=True)
        self.reader.start()

    def _first_frame(self) -> list[bytes] | None:
        box: list = []
        reader = threading.Thread(target=lambda: box.append(nvrtc_child.read_frame(self.proc.stdout.fileno())),
                                  daemon=True)
        reader.start()
        reader.join(_HELPER_START_S)
        return box[0] if box else None

    def _read(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                frame = nvrtc_child.read_frame(fd)
            except OSError:
                frame = None
            if frame is None:
                break
            with self.lock:
                slot = self.waiting.pop(frame[0], None)
            if slot is not None:
                slot[1] = frame[1:]
                slot[0].set()
        with self.lock:
            self.alive = False
            waiting, self.waiting = self.waiting, {}
        for slot in waiting.values():
            slot[0].set()  # answer None: the helper died

    def compile(self, fields: list[bytes], wait_s: float) -> list[bytes] | None:
        """The helper's answer to a request (*fields* without the id); None if the helper died."""
        slot = [threading.Event(), None]
        with self.lock:  # never held across I/O: the reader needs it to hand answers out
            if not self.alive:
                return None
            ident = str(next(self.ids)).encode()
            self.waiting[ident] = slot
        try:
            with self.write_lock:
                nvrtc_child.write_frame(self.proc.stdin.fileno(), [ident, *fields])
        except (OSError, ValueError):  # the helper is gone (or closed under us)
            with self.lock:
                self.waiting.pop(ident, None)
            return None
        if not slot[0].wait(wait_s):
            self.close()  # it hangs: nothing it says can be trusted now
            raise InfrastructureError(f"the NVRTC helper did not answer within {wait_s:g} s")
        return slot[1]

    def close(self) -> None:
        """Stop the helper (its stdin closing makes it kill its children) and remove its folder."""
        with self.lock:
            self.alive = False
        if not self.write_lock.acquire(timeout=5):  # a writer is stuck on a helper that hangs
            self._kill()
            self.write_lock.acquire()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        finally:
            self.write_lock.release()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self._kill()
            self.proc.wait()
        reader = getattr(self, "reader", None)
        if reader is not None and reader is not threading.current_thread():
            reader.join(5)  # it reads end of file now that the helper is gone
        if reader is None or not reader.is_alive():
            self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass


def _helper_env() -> dict[str, str]:
    """Nothing of the judge's environment: `-I -S`, an explicit sys.path and the library
    paths the judge resolved (`nvrtc_library_paths`) do without it."""
    return {"LANG": "C"}


_helper: _Helper | None = None
_helper_lock = threading.Lock()


def _forget_helper_in_child() -> None:
    """A forked judge process gets a helper of its own: the inherited one is its parent's, whose
    pipes it closes (so the parent's helper still sees end of file when the parent exits)."""
    global _helper, _helper_lock
    if _helper is not None:
        for stream in (_helper.proc.stdin, _helper.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
    _helper, _helper_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_helper_in_child)


@atexit.register
def _stop_helper() -> None:
    if _helper is not None:
        _helper.close()


def _running_helper(dead: _Helper | None = None) -> _Helper:
    """The live helper, started if there is none (or *dead* is the current one)."""
    global _helper
    with _helper_lock:
        if _helper is not None and (_helper is dead or not _helper.alive):
            _helper.close()
            _helper = None
        if _helper is None:
            _helper = _Helper()
        return _helper


def helper_pid() -> int | None:
    """The helper process's id, if one runs (tests kill it to see it come back)."""
    helper = _helper
    return helper.proc.pid if helper is not None and helper.alive else None


def _in_helper(fields: list[bytes], limits: Limits) -> list[bytes]:
    """Run one compile request in the helper, starting or restarting it as needed."""
    helper = None
    for _ in range(2):  # a helper that died under us is replaced once
        helper = _running_helper(dead=helper)
        answer = helper.compile(fields, limits.wall_s + _HELPER_GRACE_S)
        if answer is not None:
            return answer
    raise InfrastructureError("the NVRTC helper died twice during one compile")


@functools.lru_cache(maxsize=2048)
def _compile(job: _Job) -> NvrtcResult | _Rejected:
    nvrtc_version()  # libnvrtc missing here means missing for the helper too: say so first
    prepared = prepare_for_nvrtc(job.source)
    if cuda_include_dir() is None and re.search(r"#\s*include\s*[<\"]cuda_", prepared):
        raise InfrastructureError(f"cuda_fp16.h / cuda_bf16.h not found; {_HEADERS_HINT}")
    if _cccl_include_dir() is None and re.search(r"#\s*include\s*[<\"]cooperative_groups", prepared):
        raise InfrastructureError(f"CUDA's C++ library (cuda/std/...) not found for cooperative_groups.h; "
                                  f"{_CCCL_HINT}")
    if re.search(r"#\s*include\s*[<\"]mma\.h", prepared) and not _has_crt_mma():
        raise InfrastructureError(f"crt/mma.h (which mma.h includes) not found; {_CRT_HINT}")
    options = compile_options(job.arch)
    limits = NVRTC_LIMITS
    start = time.perf_counter()
    status, *payload = _in_helper(
        [prepared.encode(), job.name.encode(), b"\0".join(options),
         b"1" if job.arch.startswith("sm_") else b"0", repr(float(limits.wall_s)).encode(),
         str(int(limits.cpu_s)).encode(), str(int(limits.memory_bytes)).encode(),
         b"\0".join(f"&{n}".encode() for n in job.names)], limits)
    seconds = time.perf_counter() - start
    if status == b"ok":
        ptx, cubin, log, _, lowered = payload
        return NvrtcResult(ptx=ptx.decode(errors="replace"), log=redact_log(log.decode(errors="replace")),
                           seconds=seconds, arch=job.arch, cubin=cubin,
                           lowered=dict(zip(job.names, lowered.decode().split("\0"))) if job.names else {})
    if status == b"rejected" and _OUT_OF_MEMORY.search(payload[0].decode(errors="replace")):
        status, payload = b"limit", [b"memory"]
    if status == b"rejected":
        log = redact_log(payload[0].decode(errors="replace"))
        text, line = _first_error(log, job.name)
        return _Rejected(f"NVRTC rejected the kernel: {text}", line, log)
    if status == b"limit":
        err = limit_error("NVRTC", payload[0].decode(), limits)
        if payload[0] == b"wall time":
            raise err  # depends on the machine's load: not remembered
        return _Rejected(err.reason, None, "")
    if status == b"crashed":
        return _Rejected(f"NVRTC crashed on the kernel ({payload[0].decode(errors='replace')})", None, "")
    raise InfrastructureError(redact_log(payload[0].decode(errors="replace") if payload else "no answer"))


def nvrtc_compile(source: str, *, arch: str = "compute_80", name: str = "submission.cu",
                  names: tuple[str, ...] = ()) -> NvrtcResult:
    """Compile *source* (a submission's full text) with NVRTC for *arch*; cached by content.

    *arch* is a virtual architecture (`compute_80`: PTX only) or a real one (`sm_90`: PTX and a
    cubin). *names* are kernels (`relu`, `sgemm<32, 32, 8>`) and `__constant__` arrays whose
    symbols `lowered` gives (NVRTC's name expressions: C++ linkage mangles them). Calling again
    with the same text, arch, name and names returns the same `NvrtcResult` object.

    Raises:
        CompileError: NVRTC rejected the text; the message quotes the first error and `.line`
            names its line in the submission; `.log` is NVRTC's whole log.
        InfrastructureError: libnvrtc or the CUDA headers cannot be found (the hint says what to
            install), or NVRTC failed for a reason that is not the kernel's (a bad option).

    >>> r = nvrtc_compile('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }')
    >>> ".entry k(" in r.ptx
    True
    """
    if not re.fullmatch(r"(compute|sm)_\d+[a-z]?", arch):
        raise ValueError(f"arch {arch!r} is not of the form 'compute_80' or 'sm_90'")
    job = _Job(hashlib.sha256(source.encode()).hexdigest(), arch, name, source, tuple(names))
    result = _compile(job)
    if isinstance(result, _Rejected):
        raise CompileError(result.message, line=result.line, log=result.log)
    return result
