"""Compile a submission with NVRTC (CUDA's runtime compiler) to PTX, and to a cubin for a real GPU.

NVRTC needs no GPU: it is the compile gate (a mutant counts as compilable only if NVRTC accepts it)
and it builds the code the `cuda` backend loads. The library comes from the `nvidia-cuda-nvrtc`
wheel through `cuda-bindings`; `cuda_fp16.h` and `cuda_bf16.h` come from `nvidia-cuda-runtime`.

The text goes through `prepare_for_nvrtc` first, so error lines are the submission's own lines.
Results (and rejections) are cached in-process by (source hash, arch, name). NVRTC is thread-safe:
each call creates and destroys its own program.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CompileError, InfrastructureError
from .source_prep import prepare_for_nvrtc

__all__ = ["NvrtcResult", "nvrtc_compile", "nvrtc_version", "nvrtc_supported_archs",
           "cuda_include_dir", "compile_options"]

_INSTALL_HINT = "pip install cuda-bindings nvidia-cuda-nvrtc"
_HEADERS_HINT = "pip install nvidia-cuda-runtime"

#: `submission.cu(12): error: identifier "x" is undefined` (also `catastrophic error`).
_ERROR_LINE = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<text>.*)$")
_ANY_ERROR = re.compile(r"^(?:.*: )?(?:catastrophic )?error: (?P<text>.*)$")


@dataclass(frozen=True)
class NvrtcResult:
    """What NVRTC produced for one source and arch.

    `ptx` is always present; `cubin` only for a real architecture (`sm_XX`), empty for a virtual
    one (`compute_XX`). `log` holds NVRTC's warnings, `seconds` the wall time of the compile that
    filled the cache.
    """

    ptx: str
    log: str
    seconds: float
    arch: str = "compute_80"
    cubin: bytes = field(default=b"", repr=False)


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
    """The NVRTC options mutagym compiles with for *arch* (`compute_80`, `sm_90`, ...)."""
    options = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
    include = cuda_include_dir()
    if include is not None:
        options.append(b"-I" + str(include).encode())
    return options


@dataclass(frozen=True)
class _Job:
    """Cache key: the hash, arch and name; the text rides along without taking part in eq/hash."""

    sha256: str
    arch: str
    name: str
    source: str = field(compare=False, repr=False)


@dataclass(frozen=True)
class _Rejected:
    message: str
    line: int | None
    log: str


def _log(nvrtc, prog) -> str:
    size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buffer = b" " * size
    _check(nvrtc.nvrtcGetProgramLog(prog, buffer), "nvrtcGetProgramLog")
    return buffer.rstrip(b"\x00").decode(errors="replace")


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


@functools.lru_cache(maxsize=2048)
def _compile(job: _Job) -> NvrtcResult | _Rejected:
    nvrtc = _nvrtc_module()
    prepared = prepare_for_nvrtc(job.source)
    if cuda_include_dir() is None and re.search(r"#\s*include\s*[<\"]cuda_", prepared):
        raise InfrastructureError(f"cuda_fp16.h / cuda_bf16.h not found; {_HEADERS_HINT}")
    options = compile_options(job.arch)
    start = time.perf_counter()
    prog = _check(_call(nvrtc.nvrtcCreateProgram, prepared.encode(), job.name.encode(), 0, [], []),
                  "nvrtcCreateProgram")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        log = _log(nvrtc, prog)
        if int(err) == int(nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION):
            text, line = _first_error(log, job.name)
            return _Rejected(f"NVRTC rejected the kernel: {text}", line, log)
        if int(err) != 0:
            _, what = nvrtc.nvrtcGetErrorString(err)
            raise InfrastructureError(
                f"nvrtcCompileProgram failed: {what.decode(errors='replace')} (options {options!r})\n{log}")
        size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        cubin = b""
        if job.arch.startswith("sm_"):
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            cubin = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return NvrtcResult(ptx=ptx.rstrip(b"\x00").decode(), log=log,
                       seconds=time.perf_counter() - start, arch=job.arch, cubin=cubin)


def nvrtc_compile(source: str, *, arch: str = "compute_80", name: str = "submission.cu") -> NvrtcResult:
    """Compile *source* (a submission's full text) with NVRTC for *arch*; cached by content.

    *arch* is a virtual architecture (`compute_80`: PTX only) or a real one (`sm_90`: PTX and a
    cubin). Calling again with the same text, arch and name returns the same `NvrtcResult` object.

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
    job = _Job(hashlib.sha256(source.encode()).hexdigest(), arch, name, source)
    result = _compile(job)
    if isinstance(result, _Rejected):
        raise CompileError(result.message, line=result.line, log=result.log)
    return result
