"""Builds for the CPU emulator: the sandboxed runner, the precompiled emulation header, and kernels.

Everything is cached under `MUTAGYM_CACHE` (default `~/.cache/mutagym`) by content hash: the
runner and the header are built once per version of `csrc/`, a kernel once per translation unit.
A precompiled header is only used by g++ when the `.gch` sits beside the header that is resolved,
so the header and its `.gch` live together in one cache folder. Builds write to a temporary name
and rename, so concurrent processes never see half a file.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import CompileError, InfrastructureError

CSRC = Path(__file__).with_name("csrc")
EMULATION_HEADER = "mutagym_cuda.h"

#: Flags shared by the precompiled header and every kernel (g++ refuses a .gch built otherwise).
#: -O2 runs kernels 1.2x faster than -O1 (kill-matrix tasks, benchmarks/README.md) with the same
#: IEEE arithmetic; two of its optimisations are turned off because CUDA code relies on their
#: absence: type punning through pointer casts (strict aliasing), and a null dereference that must
#: fault as a memory access, not become a trap (isolate-erroneous-paths).
KERNEL_FLAGS = (
    "-std=gnu++17", "-O2", "-fno-strict-aliasing", "-fno-isolate-erroneous-paths-dereference",
    "-fPIC", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti",
    "-fno-threadsafe-statics", "-fno-stack-protector", "-fno-math-errno", "-fno-plt",
    "-w",
)
#: Kernels link only against the math library (and libgcc's arithmetic helpers), with no C runtime
#: start files, so the object carries no initialisers of its own.
KERNEL_LINK = ("-shared", "-nostdlib", "-lm", "-lgcc")
RUNNER_FLAGS = ("-std=gnu++17", "-O2", "-rdynamic")


def cache_dir() -> Path:
    root = Path(os.environ.get("MUTAGYM_CACHE", Path.home() / ".cache" / "mutagym"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        raise InfrastructureError("g++ was not found: the CPU emulator needs it (apt-get install g++)")
    return cxx


@functools.lru_cache(maxsize=1)
def runtime_version() -> str:
    """Hash of the emulator's C++ sources and flags: a change rebuilds every cached object."""
    h = hashlib.sha256()
    for path in sorted(CSRC.iterdir()):
        if path.suffix in (".h", ".cpp"):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    h.update(" ".join(KERNEL_FLAGS + KERNEL_LINK + RUNNER_FLAGS).encode())
    return h.hexdigest()[:16]


def _locked_build(target: Path, build) -> Path:
    """Run `build(tmp_path)` once across processes, then atomically publish it as `target`."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
            os.close(fd)
            try:
                build(Path(tmp))
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    return target


def _run(cmd: list[str], what: str, stdin: str | None = None) -> None:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InfrastructureError(f"building {what} failed:\n{proc.stderr[-4000:]}")


@functools.lru_cache(maxsize=1)
def runner_path() -> Path:
    """The sandboxed runner executable, built once per runtime version."""
    target = cache_dir() / f"runtime-{runtime_version()}" / "mg_runner"
    return _locked_build(target, lambda tmp: _run(
        [compiler(), *RUNNER_FLAGS, "-o", str(tmp), str(CSRC / "runner.cpp"), "-ldl", "-lm"],
        "the kernel runner"))


@functools.lru_cache(maxsize=1)
def header_path() -> Path:
    """The emulation header inside the cache, with its precompiled `.gch` beside it."""
    folder = cache_dir() / f"runtime-{runtime_version()}" / "include"
    if not (folder / f"{EMULATION_HEADER}.gch").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for path in CSRC.glob("*.h"):
            dest = folder / path.name
            if not dest.exists() or dest.read_bytes() != path.read_bytes():
                shutil.copyfile(path, dest)
        _locked_build(folder / f"{EMULATION_HEADER}.gch", lambda tmp: _run(
            [compiler(), *KERNEL_FLAGS, "-x", "c++-header", str(folder / EMULATION_HEADER), "-o", str(tmp)],
            "the precompiled emulation header"))
    return folder / EMULATION_HEADER


def build_kernel(translation_unit: str) -> Path:
    """Compile a translation unit to a shared object (cached by content); CompileError on failure."""
    key = hashlib.sha256(f"{runtime_version()}\n{translation_unit}".encode()).hexdigest()
    target = cache_dir() / f"runtime-{runtime_version()}" / "kernels" / key[:2] / f"{key}.so"
    if target.exists():
        return target
    header = header_path()

    def build(tmp: Path) -> None:
        source = tmp.with_suffix(".cpp")
        source.write_text(translation_unit)
        try:
            proc = subprocess.run(
                [compiler(), *KERNEL_FLAGS, "-include", str(header), "-o", str(tmp), str(source),
                 *KERNEL_LINK],
                capture_output=True, text=True)
        finally:
            source.unlink(missing_ok=True)
        if proc.returncode != 0:
            log = proc.stderr.replace(str(source), "submission.cu")
            first = next((line for line in log.splitlines() if "error" in line), log.strip()[:300])
            raise CompileError(f"g++ rejected the kernel: {first.strip()}", log=log)

    return _locked_build(target, build)
