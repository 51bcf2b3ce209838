"""The NVRTC helper process: libnvrtc loaded once, one forked, rlimited child per compile.

NVRTC reads hostile text and a 1 KB preprocessor bomb keeps it busy for hours in tens of GB, so
it must not run in the judge. A fresh Python per compile would cost more than the compile (the
import of cuda.bindings and the load of libnvrtc are ~0.2 s); instead this helper loads them once
and forks: the child sets RLIMIT_AS/RLIMIT_CPU on itself, compiles and writes its result to a
pipe, and the helper kills it past its wall clock. One child is always forked ahead and waits for
its request, having taken its copy-on-write faults early (`_prefault`), so a compile pays neither
the fork nor most of the faults; the helper answers when the pipe closes and reaps the exit
later. Measured cost: 1.1-1.3x an in-process compile (benchmarks/bench_nvrtc.py). The helper
is single-threaded (NVRTC starts no threads either), which is what makes forking it safe, and
it imports nothing of mutagym (it runs with `-I -S`; the parent's `sys.path` and the absolute
paths of libnvrtc and its builtins, as the parent resolved them, come in argv);
`nvrtc.py` imports the framing from here.

Protocol, on the helper's stdin and stdout: frames of byte fields (`write_frame`). The helper
first sends `ready, <major>, <minor>` or `error, <message>`. A request is `id, source, name,
options (NUL-separated), want_cubin, wall_s, cpu_s, memory_bytes, name expressions
(NUL-separated)`; the answer is `id, status, ...`: `ok, ptx, cubin, log, seconds, lowered names
(NUL-separated, one per name expression)` | `rejected, log` | `limit, <limit name>` | `crashed, <signal>`
| `error, <message>` (NVRTC failed for a reason that is not the text's).
"""

from __future__ import annotations

import os
import resource
import select
import signal
import struct
import sys
import time

_U32 = struct.Struct("<I")


def write_frame(fd: int, fields: list[bytes]) -> None:
    """Write one frame (a count, then each field's length and bytes) to *fd* in full."""
    data = _U32.pack(len(fields)) + b"".join(_U32.pack(len(f)) + f for f in fields)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int) -> list[bytes] | None:
    """Read one frame from *fd* (blocking); None at end of file."""
    head = _read_exact(fd, 4)
    if head is None:
        return None
    fields = []
    for _ in range(_U32.unpack(head)[0]):
        size = _read_exact(fd, 4)
        field = None if size is None else _read_exact(fd, _U32.unpack(size)[0])
        if field is None:
            return None
        fields.append(field)
    return fields


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _unframe(data: bytes) -> list[bytes] | None:
    """Fields of a frame held in memory; None if it is cut or malformed (the child died mid-write)."""
    try:
        (count,), at, fields = _U32.unpack_from(data), 4, []
        for _ in range(count):
            (size,) = _U32.unpack_from(data, at)
            at += 4
            if at + size > len(data):
                return None
            fields.append(data[at:at + size])
            at += size
        return fields if at == len(data) else None
    except struct.error:
        return None


# ------------------------------------------------------------------------------ in the child

def _compile(nvrtc, source: bytes, name: bytes, options: list[bytes], want_cubin: bool,
             expressions: list[bytes]) -> list[bytes]:
    """One NVRTC compile; the answer's status and payload. Each of *expressions* (`&f<8>`: a
    `__global__` function or a `__constant__` variable) is added as a name expression and its
    lowered (mangled) name returned, in order."""
    def check(result):
        err, *values = result
        if int(err) != 0:
            if int(err) == int(nvrtc.nvrtcResult.NVRTC_ERROR_OUT_OF_MEMORY):
                raise MemoryError
            raise RuntimeError(nvrtc.nvrtcGetErrorString(err)[1].decode(errors="replace"))
        return values[0] if len(values) == 1 else values

    start = time.perf_counter()
    prog = check(nvrtc.nvrtcCreateProgram(source, name, 0, [], []))
    try:
        for expression in expressions:
            check(nvrtc.nvrtcAddNameExpression(prog, expression))
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        log = log.rstrip(b"\x00")
        if int(err) == int(nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION):
            return [b"rejected", log]
        if int(err) == int(nvrtc.nvrtcResult.NVRTC_ERROR_OUT_OF_MEMORY):
            raise MemoryError
        if int(err) != 0:
            what = nvrtc.nvrtcGetErrorString(err)[1].decode(errors="replace")
            return [b"error", f"nvrtcCompileProgram failed: {what} (options {options!r})\n".encode() + log]
        ptx = b" " * check(nvrtc.nvrtcGetPTXSize(prog))
        check(nvrtc.nvrtcGetPTX(prog, ptx))
        cubin = b""
        if want_cubin:
            cubin = b" " * check(nvrtc.nvrtcGetCUBINSize(prog))
            check(nvrtc.nvrtcGetCUBIN(prog, cubin))
        lowered = [check(nvrtc.nvrtcGetLoweredName(prog, expression)) for expression in expressions]
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    seconds = time.perf_counter() - start
    return [b"ok", ptx.rstrip(b"\x00"), cubin, log, repr(seconds).encode(), b"\0".join(lowered)]


def _child(nvrtc, requests: int, out: int) -> None:
    """In a forked child: wait for one request, limit ourselves, compile, answer; never return."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _prefault()
        request = read_frame(requests)
        if request is None:  # the helper went away, or retired us
            os._exit(0)
        _, source, name, options, want_cubin, _, cpu_s, memory_bytes, expressions = request
        cpu = int(cpu_s)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # NVRTC writes no files
        resource.setrlimit(resource.RLIMIT_AS, (int(memory_bytes), int(memory_bytes)))
        try:
            answer = _compile(nvrtc, source, name, [o for o in options.split(b"\0") if o],
                              want_cubin == b"1", [e for e in expressions.split(b"\0") if e])
        except MemoryError:
            answer = [b"limit", b"memory"]
        write_frame(out, answer)
        os.close(out)  # the helper answers on end of file: before, not after, the exit's unmapping
    except MemoryError:
        _write_quietly(out, [b"limit", b"memory"])
    except BaseException as err:  # noqa: BLE001 - whatever it is, the helper must hear of it
        _write_quietly(out, [b"error", f"{type(err).__name__}: {err}".encode(errors="replace")])
    finally:
        os._exit(0)


def _write_quietly(fd: int, fields: list[bytes]) -> None:
    try:
        write_frame(fd, fields)
    except BaseException:  # noqa: BLE001 - nothing left to tell anyone
        pass


_MADV_POPULATE_WRITE = 23  # Linux 5.14
_PREFAULT_MAX_BYTES = 64 << 20
_madvise = None  # set by `main`, in the helper: a child must not pay for importing ctypes


def _prefault() -> None:
    """Copy the helper's heap into this child now, while it waits, not during the compile.

    After a fork every page NVRTC writes is first copied (copy-on-write): ~3,000 faults, a
    fifth of a small compile's time on this machine. The waiting child takes most of them in
    advance, with one madvise on the [heap] (~15 MB; the other mappings are mostly untouched by
    a compile, and populating them all costs more than it saves)."""
    if _madvise is None:
        return
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if parts[1] == "rw-p" and parts[-1] == "[heap]":
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    if hi - lo <= _PREFAULT_MAX_BYTES:
                        _madvise(lo, hi - lo, _MADV_POPULATE_WRITE)
    except Exception:  # noqa: BLE001 - an old kernel only makes the compile slower
        pass


def _load_madvise():
    try:
        import ctypes
        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        return madvise
    except Exception:  # noqa: BLE001 - no prefault, then
        return None


# ------------------------------------------------------------------------------ in the helper

class _Child:
    """One forked child: its pid, request and result pipes, answer so far and wall deadline."""

    def __init__(self, pid: int, requests: int, results: int):
        self.pid, self.requests, self.results = pid, requests, results
        self.ident, self.deadline, self.cpu_s = b"", 0.0, 0
        self.data = bytearray()


def _fork_child(nvrtc) -> _Child:
    """A child that prefaults, then waits for its request; OSError if it cannot be made."""
    req_r, req_w = os.pipe()
    try:
        res_r, res_w = os.pipe()
    except OSError:
        os.close(req_r)
        os.close(req_w)
        raise
    try:
        pid = os.fork()
    except OSError:
        for fd in (req_r, req_w, res_r, res_w):
            os.close(fd)
        raise
    if pid == 0:
        os.close(req_w)
        os.close(res_r)
        _child(nvrtc, req_r, res_w)
    os.close(req_r)
    os.close(res_w)
    os.set_blocking(res_r, False)
    return _Child(pid, req_w, res_r)


def _verdict(job: _Child, status: int, usage) -> list[bytes]:
    """The answer for a child that ended without a whole answer: from how it died."""
    fields = _unframe(bytes(job.data)) if job.data else None
    if fields:
        return fields
    cpu = usage.ru_utime + usage.ru_stime
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= job.cpu_s):
            return [b"limit", b"CPU time"]
        # An allocation that failed inside libnvrtc (std::bad_alloc ends in abort) looks like
        # this; so does a crash of NVRTC on a strange text. Both keep the text out.
        return [b"crashed", signal.Signals(sig).name.encode()]
    return [b"error", f"the compile child ended with status {os.waitstatus_to_exitcode(status)} "
                      "without an answer".encode()]


class _Helper:
    """The helper's state: one idle child kept ready, the children compiling, the unreaped."""

    def __init__(self, nvrtc, requests: int, answers: int):
        self.nvrtc, self.requests, self.answers = nvrtc, requests, answers
        self.idle: _Child | None = None
        self.running: dict[int, _Child] = {}   # by result pipe
        self.unreaped: set[int] = set()

    def dispatch(self, request: list[bytes]) -> None:
        """Hand *request* to the idle child (or a new one), then make the next idle child."""
        try:
            wall_s, cpu_s = float(request[5]), int(request[6])
        except (ValueError, IndexError) as err:
            write_frame(self.answers, [request[0] if request else b"", b"error", f"bad request: {err}".encode()])
            return
        for _ in range(2):
            child, self.idle = self.idle, None
            try:
                child = child or _fork_child(self.nvrtc)
            except OSError as err:
                write_frame(self.answers, [request[0], b"error", f"fork failed: {err}".encode()])
                return
            try:
                write_frame(child.requests, request)
                break
            except OSError:  # the idle child died waiting: retire it, try a fresh one
                self.retire(child)
        else:
            write_frame(self.answers, [request[0], b"error", b"no compile child could be started"])
            return
        os.close(child.requests)
        child.requests = -1
        child.ident, child.cpu_s = request[0], cpu_s
        child.deadline = time.monotonic() + wall_s
        self.running[child.results] = child
        try:
            self.idle = _fork_child(self.nvrtc)
        except OSError:
            self.idle = None  # the next request forks its own

    def retire(self, child: _Child) -> None:
        for fd in (child.requests, child.results):
            if fd >= 0:
                os.close(fd)
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.unreaped.add(child.pid)

    def readable(self, fd: int) -> None:
        job = self.running[fd]
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        if chunk:
            job.data += chunk
            return
        del self.running[fd]
        os.close(fd)
        fields = _unframe(bytes(job.data)) if job.data else None
        if fields:  # answer now; the child's exit (unmapping its memory) is reaped later
            write_frame(self.answers, [job.ident, *fields])
            self.unreaped.add(job.pid)
            return
        _, status, usage = os.wait4(job.pid, 0)
        write_frame(self.answers, [job.ident, *_verdict(job, status, usage)])

    def expire(self, now: float) -> None:
        for job in [j for j in self.running.values() if j.deadline <= now]:
            del self.running[job.results]
            os.close(job.results)
            try:
                os.kill(job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.wait4(job.pid, 0)
            write_frame(self.answers, [job.ident, b"limit", b"wall time"])

    def reap(self) -> None:
        for pid in list(self.unreaped):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.unreaped.discard(pid)

    def serve(self) -> None:
        """Answer requests until stdin closes, then kill whatever still runs."""
        try:
            self.idle = _fork_child(self.nvrtc)
        except OSError:
            self.idle = None
        while True:
            deadlines = [j.deadline for j in self.running.values()]
            wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            if self.unreaped:
                wait = 0.05 if wait is None else min(wait, 0.05)
            ready, _, _ = select.select([self.requests, *self.running], [], [], wait)
            for fd in ready:
                if fd != self.requests:
                    self.readable(fd)
                    continue
                request = read_frame(self.requests)
                if request is None:
                    self.shut_down()
                    return
                self.dispatch(request)
            self.expire(time.monotonic())
            self.reap()

    def shut_down(self) -> None:
        if self.idle is not None:
            self.retire(self.idle)
        for job in list(self.running.values()):
            self.retire(job)
        for pid in self.unreaped:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def main() -> None:
    import ctypes
    import json
    sys.path[:] = json.loads(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the judge's ^C is the judge's to handle
    try:
        # The judge's own resolution, by absolute path: `cuda.bindings` finds a library that is
        # already loaded before it searches (and its search, without `site`, misses a venv).
        for library in json.loads(sys.argv[2]):
            ctypes.CDLL(library, mode=os.RTLD_GLOBAL)
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()  # loads libnvrtc before the first fork
        if int(err) != 0:
            raise RuntimeError(nvrtc.nvrtcGetErrorString(err)[1].decode(errors="replace"))
    except Exception as err:  # noqa: BLE001 - the parent turns it into an InfrastructureError
        write_frame(1, [b"error", f"{type(err).__name__}: {err}".encode(errors="replace")])
        return
    global _madvise
    _madvise = _load_madvise()
    _warm_up(nvrtc)
    write_frame(1, [b"ready", str(major).encode(), str(minor).encode()])
    _Helper(nvrtc, 0, 1).serve()


def _warm_up(nvrtc) -> None:
    """Compile a trivial kernel here once, so every forked child inherits NVRTC's lazy set-up
    (its first compile in a process is the slowest) instead of redoing it."""
    try:
        _compile(nvrtc, b'extern "C" __global__ void k(float* y) { y[0] = 1.0f; }', b"warm_up.cu",
                 [b"--gpu-architecture=compute_80"], False, [b"&k"])
    except Exception:  # noqa: BLE001 - a failed warm-up only costs the children time
        pass


if __name__ == "__main__":
    main()
