"""Builds for the CPU emulator: the sandboxed runner, the precompiled emulation header, and kernels.

Everything is cached under `MUTAGYM_CACHE` (default `~/.cache/mutagym`) by content hash: the
runner and the header are built once per version of `csrc/`, a kernel once per translation unit.
A precompiled header is only used by g++ when the `.gch` sits beside the header that is resolved,
so the header and its `.gch` live together in one cache folder. Builds write to a temporary name
and rename, so concurrent processes never see half a file.

A kernel's text is the policy's, so its g++ runs in a bounded child (`bounded.run_bounded`: wall,
CPU, memory and file-size limits, no stdin, no environment) in a private folder, and its log is
redacted (`redact.redact_log`). The runner and the header are our own sources and build directly.

Kernel objects are kept within a byte budget (`MUTAGYM_CACHE_BYTES`, see `KernelCache`).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

from .bounded import DEFAULT_LIMITS, Limits, private_dir, run_bounded
from .errors import CompileError, InfrastructureError
from .races import RACE_FLAGS, SANITIZER_CONSTRUCTOR_SECTION, race_check_enabled
from .redact import redact_log

CSRC = Path(__file__).with_name("csrc")
EMULATION_HEADER = "mutagym_cuda.h"

#: Flags shared by the precompiled header and every kernel (g++ refuses a .gch built otherwise).
#: -O2 runs kernels 1.2x faster than -O1 (kill-matrix tasks, benchmarks/README.md) with the same
#: IEEE arithmetic; two of its optimisations are turned off because CUDA code relies on their
#: absence: type punning through pointer casts (strict aliasing), and a null dereference that must
#: fault as a memory access, not become a trap (isolate-erroneous-paths). A local read before it
#: is written (`float acc;` then `acc += ...`) holds what the register or the fiber's stack held
#: last, which depends on the inputs run before it in the same runner, so its verdict changed with
#: the batch (the kill matrix's cells must not); `-ftrivial-auto-var-init=pattern` gives every
#: such local the bytes 0xFE (a float of -1.7e38, an int of -16843010), the same on every run and
#: far from the zero that is a sum's identity (it is a max's, as a GPU register's garbage may be).
_BASE_KERNEL_FLAGS = (
    "-std=gnu++17", "-O2", "-fno-strict-aliasing", "-fno-isolate-erroneous-paths-dereference",
    "-ftrivial-auto-var-init=pattern",
    "-fPIC", "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti",
    "-fno-threadsafe-statics", "-fno-stack-protector", "-fno-math-errno", "-fno-plt",
    "-w",
)

#: FMA contraction, as nvcc's default (-fmad=true): a product that feeds an add or a subtract
#: (float or double, across statements, as NVVM sees it after inlining) becomes one fused
#: multiply-add, a single rounding. g++ does the same with -ffp-contract=fast where the target has
#: FMA instructions: on x86-64 only with -mfma (which also enables AVX encodings), so the CPU must
#: have FMA and AVX (/proc/cpuinfo); aarch64 always has FMA. `__MG_FP_CONTRACT` tells the emulation
#: headers, whose __half operators model HFMA contraction (mg_half.h). Off is nvcc -fmad=false:
#: -ffp-contract=off, which also stops the contraction GNU mode does by default on aarch64.
#: The intrinsics CUDA never contracts (__fmul_rn, __fadd_rn, atomicAdd's add, ...) stay unfused
#: behind the headers' opaque barriers; __fmaf_rn and fmaf are always fused.
#:
#: `MUTAGYM_FMA` (read at each build; a `fma=` argument of `build_kernel` wins over it): `1`/`on`
#: contracts and fails (InfrastructureError) where this CPU cannot; `0`/`off` never contracts;
#: unset or `auto` contracts where the CPU can and otherwise builds without contraction, with a
#: RuntimeWarning once (results then differ from a GPU's in the last bits of a*b+c).
FMA_ENV = "MUTAGYM_FMA"
_FMA_ON = ("-ffp-contract=fast", "-D__MG_FP_CONTRACT=1")
_FMA_OFF = ("-ffp-contract=off",)
_FMA_X86 = ("-mfma",)
_FMA_SCHEME = "fma-1"  # bumped when what the modes mean changes (it enters runtime_version)


@functools.lru_cache(maxsize=1)
def _cpu_fma_flags() -> tuple[str, ...] | None:
    """The target flags that let g++ emit FMA on this CPU; None if it has no FMA instructions."""
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return ()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
        line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
        words = set(line.partition(":")[2].split())
        return _FMA_X86 if {"fma", "avx"} <= words else None
    return ()  # other targets: g++ contracts where its baseline has FMA (ppc64le, s390x, riscv64)


def fma_contraction(fma: bool | None = None) -> bool:
    """Whether a kernel built now is contracted: *fma* if given, else `MUTAGYM_FMA`, else on where
    the CPU has FMA. Asking for it where the CPU has none is an InfrastructureError."""
    if fma is None:
        value = os.environ.get(FMA_ENV, "auto").strip().lower()
        if value in ("0", "off", "false", "no"):
            return False
        if value not in ("1", "on", "true", "yes", "auto", ""):
            raise InfrastructureError(f"{FMA_ENV}={value!r}: use 1/on, 0/off or auto")
        fma = True if value in ("1", "on", "true", "yes") else None
    if _cpu_fma_flags() is not None:
        return bool(fma) or fma is None
    if fma:
        raise InfrastructureError("FMA contraction was asked for, but this CPU has no FMA "
                                  f"instructions (x86-64 needs fma and avx); set {FMA_ENV}=0")
    if fma is None:
        _warn_no_fma()
    return False


@functools.lru_cache(maxsize=1)
def _warn_no_fma() -> None:
    warnings.warn("this CPU has no FMA instructions: kernels are built without FMA contraction, "
                  "so a*b+c rounds twice where nvcc's default fuses it", RuntimeWarning, stacklevel=3)


def kernel_flags(fma: bool | None = None) -> tuple[str, ...]:
    """Every g++ flag of a kernel build (and of its precompiled header) in the mode *fma* resolves to."""
    if fma_contraction(fma):
        return (*_BASE_KERNEL_FLAGS, *_FMA_ON, *_cpu_fma_flags())
    return (*_BASE_KERNEL_FLAGS, *_FMA_OFF)


#: The flags of the mode in effect at import (`MUTAGYM_FMA`); builds read the mode again each time.
KERNEL_FLAGS = kernel_flags()
#: Kernels link only against the math library (and libgcc's arithmetic helpers), with no C runtime
#: start files, so the object carries no initialisers of its own.
KERNEL_LINK = ("-shared", "-nostdlib", "-lm", "-lgcc")
RUNNER_FLAGS = ("-std=gnu++17", "-O2", "-rdynamic")
#: Limits of one kernel build (how they were chosen: `bounded.DEFAULT_LIMITS`); read at each
#: build, so a test may patch them.
KERNEL_LIMITS = DEFAULT_LIMITS


def cache_dir() -> Path:
    root = Path(os.environ.get("MUTAGYM_CACHE", Path.home() / ".cache" / "mutagym"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def objcopy() -> str:
    tool = shutil.which("objcopy")
    if not tool:
        raise InfrastructureError("objcopy was not found: race-checked kernels need it (apt-get install binutils)")
    return tool


def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        raise InfrastructureError("g++ was not found: the CPU emulator needs it (apt-get install g++)")
    return cxx


@functools.lru_cache(maxsize=1)
def runtime_version() -> str:
    """Hash of the emulator's C++ sources and flags: a change rebuilds every cached object. The
    contraction mode is not in it (both modes share the runner); it is in each kernel's key and in
    the precompiled header's folder."""
    h = hashlib.sha256()
    for path in sorted(CSRC.iterdir()):
        if path.suffix in (".h", ".cpp"):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    h.update(" ".join(_BASE_KERNEL_FLAGS + KERNEL_LINK + RUNNER_FLAGS).encode())
    h.update(" ".join((_FMA_SCHEME, *_FMA_ON, *_FMA_OFF, *_FMA_X86)).encode())
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


def header_path(flags: tuple[str, ...] | None = None) -> Path:
    """The emulation header inside the cache, with its `.gch` beside it built with *flags*
    (default: `kernel_flags()`, the mode in effect now): one folder per set of flags."""
    return _header_path(tuple(flags) if flags is not None else kernel_flags())


@functools.lru_cache(maxsize=8)
def _header_path(flags: tuple[str, ...]) -> Path:
    # One folder per set of flags, `runtime-<v>/headers/runtime-<flags hash>/include/`: the log
    # redactor names files in a `runtime-<hex>/include/` folder `<mutagym>/...` (redact.py).
    tag = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:12]
    folder = cache_dir() / f"runtime-{runtime_version()}" / "headers" / f"runtime-{tag}" / "include"
    if not (folder / f"{EMULATION_HEADER}.gch").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for path in CSRC.glob("*.h"):
            dest = folder / path.name
            if not dest.exists() or dest.read_bytes() != path.read_bytes():
                shutil.copyfile(path, dest)
        _locked_build(folder / f"{EMULATION_HEADER}.gch", lambda tmp: _run(
            [compiler(), *flags, "-x", "c++-header", str(folder / EMULATION_HEADER), "-o", str(tmp)],
            "the precompiled emulation header"))
    return folder / EMULATION_HEADER


def context_object(flags: tuple[str, ...]) -> Path:
    """What the runner calls in a kernel object while it loads it (csrc/mg_context.cpp), compiled
    once per set of kernel *flags* on its own, never with a submission's text, and never
    instrumented (it runs before any check is set up); every kernel object links it in."""
    plain = tuple(f for f in flags if f not in RACE_FLAGS)
    target = header_path(plain).with_name("mg_context.o")
    return _locked_build(target, lambda tmp: _run(
        [compiler(), *plain, "-c", "-o", str(tmp), str(CSRC / "mg_context.cpp")], "the kernel context object"))


def kernel_build_steps(header: Path, context: Path, flags: tuple[str, ...], race: bool) -> list[list[str]]:
    """The commands that turn `submission.cu.cpp` into `kernel.so` in the current folder, with the
    precompiled *header* and the *context* object: one g++ run, or for an instrumented build three
    (compile, take the sanitizer's constructor out of the object, link)."""
    if not race:
        return [[compiler(), *flags, "-include", str(header), "-o", "kernel.so", "submission.cu.cpp", str(context),
                 *KERNEL_LINK]]
    return [[compiler(), *flags, "-include", str(header), "-c", "-o", "kernel.o", "submission.cu.cpp"],
            [objcopy(), f"--remove-section={SANITIZER_CONSTRUCTOR_SECTION}", "kernel.o"],
            [compiler(), "-o", "kernel.so", "kernel.o", str(context), *KERNEL_LINK]]


def build_kernel(translation_unit: str, *, limits: Limits | None = None,
                 fma: bool | None = None, race_check: bool | None = None) -> Path:
    """Compile a translation unit to a shared object (cached by content); CompileError on failure.

    A limit hit (*limits*, default `KERNEL_LIMITS`) is a CompileError naming the limit. *fma*:
    FMA contraction on or off (default: `MUTAGYM_FMA`, see `fma_contraction`). *race_check*:
    instrumented for the runner's race and state checks (default: `MUTAGYM_RACE_CHECK`, see
    `races`); then g++ compiles and links in two steps, and the sanitizer's constructor is taken
    out of the object in between."""
    race = race_check_enabled(race_check)
    flags = kernel_flags(fma) + (RACE_FLAGS if race else ())
    key = hashlib.sha256(f"{runtime_version()}\n{' '.join(flags)}\n{translation_unit}".encode()).hexdigest()
    target = cache_dir() / f"runtime-{runtime_version()}" / "kernels" / key[:2] / f"{key}.so"
    if KernelCache.touch(target):
        return target
    header, context = header_path(flags), context_object(flags)
    built = []

    def build(tmp: Path) -> None:
        with private_dir("mg-gxx-") as work:
            (work / "submission.cu.cpp").write_text(translation_unit)
            for step in kernel_build_steps(header, context, flags, race):
                proc = run_bounded(step, what="g++", limits=limits or KERNEL_LIMITS, cwd=work)
                if proc.returncode != 0:
                    log = redact_log(proc.stderr.decode(errors="replace"))
                    first = next((line for line in log.splitlines() if "error" in line), log.strip()[:300])
                    raise CompileError(f"g++ rejected the kernel: {first.strip()}", log=log)
            shutil.copyfile(work / "kernel.so", tmp)
        built.append(tmp.stat().st_size)

    _locked_build(target, build)
    if built:
        KernelCache(cache_dir()).added(built[0])
    return target


class KernelCache:
    """Kernel objects within a byte budget, least recently used evicted first.

    Every process building kernels shares one account, `<cache>/kernel-cache.json` (under a lock
    file beside it): a running estimate of the bytes the cache holds, to which each new object
    adds its size. Only when the estimate passes the budget are the files counted again (one scan
    of every `runtime-*` folder: ~5,000 stats), and the least recently used removed until the cache
    holds `LOW_WATER` of the budget; so a scan comes once per tenth of the budget built (or once a
    day, to correct the estimate), not per build. Objects of other runtime versions are never used again: each old `runtime-*` folder is
    one entry (its newest file's time) and goes whole.

    A hit touches the object (`touch`), and nothing used within `GRACE_S` is evicted, even past
    the budget: a `CpuKernel` built a moment ago has its runner dlopen the object at each batch,
    so removing it between build and run would break a kernel the caller holds. (A kernel held
    unused for longer than the grace can lose its object; its next batch then fails to load it.)
    """

    DEFAULT_BYTES = 2 << 30   # ~5,000 kill-matrix objects of tens of KiB are ~250 MB: eight times
    LOW_WATER = 0.9
    GRACE_S = 3600.0
    RESCAN_S = 86400.0        # the account also misses what others removed or wrote unaccounted

    def __init__(self, root: Path):
        self.root = root
        self.budget = int(os.environ.get("MUTAGYM_CACHE_BYTES", self.DEFAULT_BYTES))

    @staticmethod
    def touch(target: Path) -> bool:
        """Mark *target* used now; False if it is not there (never built, or evicted)."""
        try:
            os.utime(target)
            return True
        except FileNotFoundError:
            return False

    def added(self, nbytes: int) -> None:
        """Account for a new object of *nbytes*; evict if the cache is now past its budget."""
        with open(self.root / ".kernel-cache.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            account = self.root / "kernel-cache.json"
            try:
                state = json.loads(account.read_text())
                estimate, scanned = int(state["bytes"]) + nbytes, float(state["scanned"])
            except (OSError, ValueError, KeyError, TypeError):
                estimate, scanned = None, 0.0  # no account yet (or a broken one): count the files
            if estimate is None or estimate > self.budget or time.time() - scanned > self.RESCAN_S:
                estimate, scanned = self.evict(), time.time()
            tmp = account.with_name(f".kernel-cache.{os.getpid()}.json")
            tmp.write_text(json.dumps({"bytes": estimate, "scanned": scanned}))
            os.replace(tmp, account)

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, path) of each evictable thing: this version's kernel objects, and each
        other version's whole folder (this version's runner and header are not counted)."""
        current = f"runtime-{runtime_version()}"
        found = []
        for folder in self.root.glob("runtime-*"):
            if folder.name == current:
                for obj in folder.glob("kernels/*/*.so"):
                    try:
                        st = obj.stat()
                    except FileNotFoundError:
                        continue
                    found.append((st.st_mtime, st.st_size, obj))
                continue
            newest, size = 0.0, 0
            for path in folder.rglob("*"):
                try:
                    st = path.lstat()
                except FileNotFoundError:
                    continue
                newest, size = max(newest, st.st_mtime), size + st.st_size
            found.append((newest, size, folder))
        return found

    def evict(self) -> int:
        """Remove least recently used entries past the budget (sparing the grace); bytes left."""
        found = sorted(self.entries(), key=lambda e: e[0])
        total = sum(size for _, size, _ in found)
        if total <= self.budget:
            return total
        goal, horizon = self.budget * self.LOW_WATER, time.time() - self.GRACE_S
        for used, size, path in found:
            if total <= goal or used > horizon:
                break
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    if path.stat().st_mtime > horizon:
                        continue  # touched by a hit since the scan
                    path.unlink()
                except FileNotFoundError:
                    pass
                path.with_name(f".{path.name}.lock").unlink(missing_ok=True)
            total -= size
        return total
