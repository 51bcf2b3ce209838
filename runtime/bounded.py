"""Run a compiler on hostile text in a child that cannot hang, exhaust or read the judge.

A submission picks the compiler's input, so it picks how long the compiler runs, how much memory
it takes and what it writes: the child gets a wall clock (its whole process group is killed past
it), CPU-time, address-space and file-size limits, `/dev/null` for stdin, an empty environment,
its own session and a private working folder. Limits are set by `/bin/sh -c 'ulimit ...; exec'`
rather than `preexec_fn` (which is unsafe in a threaded judge); it costs 0.6 ms per run against
0.7 ms for util-linux `prlimit` (200 runs of `/bin/true`, this machine). A hit limit is a
`CompileError` that names it, so the verdict is the submission's, never the judge's.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import CompileError

__all__ = ["Limits", "run_bounded", "private_dir", "limit_error", "describe_bytes",
           "DEFAULT_LIMITS", "CAPTURE_BYTES"]

#: Each of stdout and stderr is kept up to this many bytes (the rest is read and dropped): an
#: error cascade on a megabyte of text is tens of megabytes, and nobody reads past the first page.
CAPTURE_BYTES = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What one bounded child may use; each limit applies to every process it starts."""

    wall_s: float          # wall clock; the whole process group is killed past it
    cpu_s: int             # RLIMIT_CPU
    memory_bytes: int      # RLIMIT_AS
    file_bytes: int        # RLIMIT_FSIZE (largest file the child may write)
    capture_bytes: int = CAPTURE_BYTES   # kept of each of stdout and stderr


#: g++ on one kernel translation unit. Measured with `/usr/bin/time -v` (this machine, g++ 12): the
#: six largest substrates build at -O2 with the precompiled header in 0.1 s and 43 MB resident;
#: the smallest address space that still maps the 10 MB `.gch` is ~80 MB (at 50 MB cc1plus says
#: "PCH allocation failure"). 1 GiB of address space is twelve times that, room for a 256 KiB
#: submission of dense code, and stops a crafted input (one reached 4 GB in 6 s) long before it
#: hurts a 2-core host running a build per core; 20 s of CPU is two hundred times a normal build;
#: the wall clock allows a loaded machine twice that; a kernel object is tens of KiB, and g++
#: writes its intermediate .s/.o in the same private folder, so 64 MiB bounds every file.
DEFAULT_LIMITS = Limits(wall_s=40.0, cpu_s=20, memory_bytes=1 << 30, file_bytes=64 << 20)

_ENV_PATH = "/usr/bin:/bin"
#: Sets the limits, then replaces itself with the command. The CPU limit is soft one second below
#: the hard one so the process sees SIGXCPU (recognisable) before the kernel's SIGKILL.
_WRAPPER = ('ulimit -c 0 && ulimit -v "$1" && ulimit -f "$2" && ulimit -S -t "$3" && '
            'ulimit -H -t "$4" && shift 4 && unset PWD OLDPWD && exec "$@"')

#: Messages of a program (`cc1plus: out of memory ...`), not of a source line (`f.cu:3:2: error: ...`).
_PROGRAM = r"^[^:\n]+: "
_MEMORY = re.compile(
    _PROGRAM + r".*(?:out of memory allocating|virtual memory exhausted|std::bad_alloc|"
    r"Cannot allocate memory|memory exhausted|PCH allocation failure)|^MemoryError", re.MULTILINE)
_FILE_SIZE = re.compile(_PROGRAM + r".*(?:File too large|File size limit exceeded)", re.MULTILINE)
_CPU = re.compile(_PROGRAM + r".*CPU time limit exceeded", re.MULTILINE)
_KILLED = re.compile(_PROGRAM + r"(?:fatal error: |internal compiler error: )?Killed", re.MULTILINE)


def describe_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def limit_error(what: str, limit: str, limits: Limits) -> CompileError:
    """The CompileError for *limit* ("wall time", "CPU time", "memory", "output file size")."""
    value = {"wall time": f"{limits.wall_s:g} s", "CPU time": f"{limits.cpu_s} s",
             "memory": describe_bytes(limits.memory_bytes),
             "output file size": describe_bytes(limits.file_bytes)}[limit]
    return CompileError(f"{what} exceeded its {limit} limit ({value})")


def _which_limit(status: int, usage, stderr: bytes, limits: Limits) -> str | None:
    """The limit a finished child ran into, or None when it ended on its own.

    Only a failed child is judged (a successful compile whose log happens to quote a message is
    fine)."""
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    text = stderr.decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    # A signal shows as -N, or as 128 + N when a shell in between reported it.
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ) or _FILE_SIZE.search(text):
        return "output file size"
    if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU) or _CPU.search(text):
        return "CPU time"
    if _MEMORY.search(text):
        return "memory"
    if code == -signal.SIGKILL or _KILLED.search(text):
        # The kernel's SIGKILL at the hard CPU limit, or the OOM killer.
        return "CPU time" if cpu >= limits.cpu_s else "memory"
    if "internal compiler error" in text and usage.ru_maxrss * 1024 >= limits.memory_bytes // 4:
        # cc1plus crashing (not reporting) when an allocation fails close to the AS limit.
        return "memory"
    return None


def run_bounded(cmd: Sequence[str], *, what: str, limits: Limits, cwd: Path,
                input: bytes | None = None) -> subprocess.CompletedProcess:
    """stdout/stderr as bytes. stdin is /dev/null unless *input* is given; the environment is
    empty but for PATH=/usr/bin:/bin, LANG=C and TMPDIR=cwd; a new session; cwd as given.
    A limit hit raises CompileError(f"{what} exceeded its <limit> limit (<value>)") naming the
    limit (wall time, CPU time, memory, output file size); otherwise returns, whatever the exit code."""
    kib = max(1, limits.memory_bytes // 1024)
    blocks = max(1, limits.file_bytes // 512)  # sh's ulimit -f counts 512-byte blocks
    cpu = max(1, int(limits.cpu_s))
    argv = ["/bin/sh", "-c", _WRAPPER, "sh", str(kib), str(blocks), str(cpu), str(cpu + 1), *cmd]
    env = {"PATH": _ENV_PATH, "LANG": "C", "TMPDIR": str(cwd)}
    deadline = time.monotonic() + limits.wall_s
    proc = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True, close_fds=True,
                            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timed_out = False
    try:
        out, err, timed_out = _drain(proc, input, deadline, limits.capture_bytes)
        status, usage = _reap(proc, deadline)
        if status is None:
            timed_out = True
            _kill_group(proc.pid)
            status, usage = _reap(proc, None)
    finally:
        if proc.returncode is None:  # an exception on the way: never leave the group running
            _kill_group(proc.pid)
            _reap(proc, None)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if timed_out:
        raise limit_error(what, "wall time", limits)
    limit = _which_limit(status, usage, err, limits)
    if limit is not None:
        raise limit_error(what, limit, limits)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


def _drain(proc: subprocess.Popen, input: bytes | None, deadline: float, cap: int):
    """Feed *input* and read both pipes until they close or the deadline passes."""
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    pending = memoryview(input or b"")
    with selectors.DefaultSelector() as sel:
        for fd in kept:
            sel.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if pending:
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(proc.pid)
                return bytes(kept[proc.stdout.fileno()]), bytes(kept[proc.stderr.fileno()]), True
            for key, _ in sel.select(left):
                if key.fd in kept:
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fd)
                    elif len(kept[key.fd]) < cap:
                        kept[key.fd] += chunk[:cap - len(kept[key.fd])]
                    continue
                try:
                    pending = pending[os.write(key.fd, pending[:65536]):]
                except BrokenPipeError:
                    pending = pending[:0]
                if not pending:
                    sel.unregister(key.fd)
                    proc.stdin.close()
    return bytes(kept[proc.stdout.fileno()]), bytes(kept[proc.stderr.fileno()]), False


def _reap(proc: subprocess.Popen, deadline: float | None):
    """wait4 the child (its rusage includes the programs it waited for); None past *deadline*."""
    while True:
        pid, status, usage = os.wait4(proc.pid, 0 if deadline is None else os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if time.monotonic() >= deadline:
            return None, None
        time.sleep(0.002)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def private_dir(prefix: str) -> Iterator[Path]:
    """A fresh 0700 temporary folder, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        os.chmod(path, 0o700)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
