"""The static checks on what the compilers see, and the one text they both compile.

The checks in `submission.py` read the raw text, with a lexer of our own; an adversary looks for
the places where that lexer and a compiler's disagree (a splice, a control character, a macro that
assembles a word). So the decisive checks run on the preprocessor's own output, in a bounded child
(`bounded.run_bounded`) that sees no host header: `-nostdinc`, and the allowed headers as empty
stubs in a private folder. That output, not the raw text, is then what NVRTC and the emulator's
g++ compile (`device_text`): the text's directives are resolved here once, so neither compiler
sees a macro of the text, and what was checked is what both build.

The text is preprocessed with g++'s own macros plus the CUDA macros NVRTC predefines
(`emulator_macros`), and the preprocessor also reports every macro the text expanded or tested
(`-dU`). A compiler's macro whose meaning differs between NVRTC and g++ (`__CUDACC_RTC__`,
`__GNUC__`, `__x86_64__`, ...), or a reserved name neither defines the same way, may not be
consulted: NVRTC's gate would otherwise accept code that means something else on a GPU. Then:

- `#pragma GCC poison` (in a prelude the submission cannot precede) turns every use of `asm`,
  `__has_include`, `_Pragma` and their spellings into an error, even when `##` assembles them;
- every file the preprocessor opened (its dependency list, a channel the text cannot write) is
  the submission or an allowed stub;
- every line the text produced is checked, whatever a line marker says (`device_text`);
- every attribute (`__attribute__((...))`, `[[...]]`) is one of `ALLOWED_ATTRIBUTES`: `section`,
  `ifunc`, `constructor`, `alias` and the rest can make code run at load time or place bytes where
  the loader executes them, and `no_sanitize_thread`, `optimize` and `target` change how the
  race-checked build is instrumented or compiled; `__declspec` is refused;
- the only pragmas left are `unroll` and `nounroll`, and no identifier takes the emulator's
  reserved `__mg_` prefix;
- no identifier names a macro only the emulator's build defines (`PATH_MAX`, `FP_NAN`, ...: its C
  library's), which NVRTC would not expand alike: the emulator's own CUDA macros (`threadIdx`,
  `printf`, `__shared__`) and those NVRTC's prelude defines the same way (`INT32_MAX`, `M_PI`)
  are the ones a text may name.

Device texts of texts that pass are remembered on disk (by hash of the text and of this check),
so a mutant pool or a judge that sees a text again pays nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
from pathlib import Path

from .bounded import Limits, private_dir, run_bounded
from .device_text import Token, mark_pragmas, read_output
from .errors import InfrastructureError, SubmissionError
from .headers import ALLOWED_HEADERS, CUDA_HEADERS
from .source_prep import PRELUDE_MACROS
from .toolchain import CSRC, EMULATION_HEADER, KERNEL_FLAGS, cache_dir, compiler, runtime_version

__all__ = ["ALLOWED_ATTRIBUTES", "POISONED", "check_preprocessed", "emulator_macros",
           "nvrtc_macros", "refused_emulator_macros"]

#: Attributes a kernel may carry (both `name` and `__name__`, with or without `gnu::`).
ALLOWED_ATTRIBUTES = frozenset((
    "aligned", "noinline", "always_inline", "unused", "maybe_unused", "packed", "const", "pure",
    "noreturn", "nodiscard", "deprecated", "fallthrough", "likely", "unlikely", "flatten", "hot",
    "cold", "may_alias", "vector_size", "warn_unused_result", "noclone", "nonnull",
    "returns_nonnull", "assume_aligned", "alloc_size", "malloc", "restrict",
))
#: Identifiers whose every use, however spelled or assembled, is an error.
POISONED = ("asm", "__asm", "__asm__", "__has_include", "__has_include_next", "_Pragma",
            # NVRTC's front end answers these otherwise than g++: the code would differ
            "__has_builtin", "__has_attribute", "__has_cpp_attribute", "__has_feature",
            "__has_extension",
            "__builtin_return_address", "__builtin_frame_address", "__builtin_extract_return_addr",
            "__builtin_eh_return", "__builtin_apply", "__builtin_apply_args", "__builtin_longjmp",
            "__builtin_setjmp", "__builtin_unwind_init")
_PRELUDE = "mutagym-checks.h"
_SOURCE = "submission.cu"
_DEPENDENCIES = "entered.d"
#: The files the preprocessor may open: the text, the prelude and the stubs; and how its line
#: markers name them.
_ENTERED_OK = frozenset({_SOURCE, _PRELUDE, *(f"include/{h}" for h in ALLOWED_HEADERS)})
_MARKED_OK = _ENTERED_OK | {f"./{_PRELUDE}", "<built-in>", "<command-line>"}
#: A 256 KiB text preprocesses in tens of milliseconds and a few tens of MB; a bomb stops here.
#: Its output is read whole up to `capture_bytes`; a text that expands past that is refused (a
#: difference or an attribute beyond the part read would go unseen).
_LIMITS = Limits(wall_s=10.0, cpu_s=5, memory_bytes=256 << 20, file_bytes=1 << 20,
                 capture_bytes=8 << 20)
#: Bumped whenever what this module checks changes: it names the on-disk verdicts.
_CHECK_VERSION = "6"

# NVRTC's predefined macros for the gate's target (compute_80), as NVRTC 13 reports them.
_NVRTC_ARCH = "800"


@functools.cache
def nvrtc_macros() -> dict[str, str]:
    """The macros NVRTC predefines for the compile gate (besides the C++ standard's own)."""
    from .nvrtc import nvrtc_version
    major, minor = nvrtc_version()
    return {
        "__CUDACC__": "1", "__CUDACC_RTC__": "1", "__CUDA_ARCH__": _NVRTC_ARCH,
        "__CUDA_ARCH_LIST__": _NVRTC_ARCH, "__CUDACC_VER_MAJOR__": str(major),
        "__CUDACC_VER_MINOR__": str(minor), "__CUDA_API_VER_MAJOR__": str(major),
        "__LP64__": "1", "__NVCC_DIAG_PRAGMA_SUPPORT__": "1", "__USE_FAST_MATH__": "0",
        "__CUDA_PREC_DIV": "1", "__CUDA_PREC_SQRT": "1", "__CUDA_FTZ": "0",
        "__cplusplus": "201703L", "__STDC_HOSTED__": "1",
    }


@functools.cache
def emulator_macros() -> dict[str, str]:
    """The CUDA macros the emulator's build defines: NVRTC's, less `__CUDACC_RTC__`, so that
    `#if __CUDA_ARCH__ >= 700` takes the same branch in the gate and in the run."""
    return {k: v for k, v in nvrtc_macros().items() if k != "__CUDACC_RTC__"}


_COMMON = ["-E", "-dU", "-MD", "-MF", _DEPENDENCIES, "-x", "c++", "-nostdinc", "-I", "include",
           "-include", _PRELUDE]


def _command() -> list[str]:
    return [compiler(), *_COMMON, *KERNEL_FLAGS, *(f"-D{k}={v}" for k, v in emulator_macros().items()),
            _SOURCE]


@functools.cache
def gcc_macros() -> dict[str, str]:
    """Every macro g++ predefines for the emulator's build (with the CUDA macros added)."""
    with private_dir("mutagym-macros-") as folder:
        (folder / "empty.cu").write_text("")
        cmd = [compiler(), "-E", "-dM", "-x", "c++", "-nostdinc", *KERNEL_FLAGS,
               *(f"-D{k}={v}" for k, v in emulator_macros().items()), "empty.cu"]
        proc = run_bounded(cmd, what="the preprocessor", limits=_LIMITS, cwd=folder)
    if proc.returncode != 0:
        raise InfrastructureError(f"g++ -dM failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return {name: value.strip() for name, value in _MACRO.findall(proc.stdout.decode())}


@functools.cache
def _same_in_both() -> frozenset[str]:
    """The predefined macros NVRTC and g++ define alike: the only ones a text may consult."""
    return frozenset(name for name, value in nvrtc_macros().items() if gcc_macros().get(name) == value)


def _verdict_path(text: str) -> Path:
    key = hashlib.sha256(f"{_CHECK_VERSION}\n{sorted(nvrtc_macros().items())}\n{text}".encode()).hexdigest()
    return cache_dir() / "checked" / key[:2] / key


def check_preprocessed(text: str) -> str:
    """Raise `SubmissionError` (naming the line) unless *text* passes the checks above; return its
    device text, what NVRTC and the emulator compile: an `#include` line for each CUDA header the
    text included, then the text as the preprocessor left it (`#line` directives keep its line
    numbers)."""
    verdict = _verdict_path(text)
    if verdict.exists():
        return verdict.read_text()
    sentinel = f"__mg_pragma_{secrets.token_hex(8)}"
    with private_dir("mutagym-check-") as folder:
        (folder / _SOURCE).write_text(mark_pragmas(text, sentinel))
        (folder / _PRELUDE).write_text(f"#pragma GCC poison {' '.join(POISONED)}\n")
        (folder / "include").mkdir()
        for header in ALLOWED_HEADERS:
            (folder / "include" / header).parent.mkdir(exist_ok=True)
            (folder / "include" / header).write_text("")
        proc = run_bounded(_command(), what="the preprocessor", limits=_LIMITS, cwd=folder)
        entered = _entered(folder / _DEPENDENCIES) if proc.returncode == 0 else []
    if proc.returncode != 0:
        _raise_first_error(proc.stderr.decode(errors="replace"))
    if len(proc.stdout) >= _LIMITS.capture_bytes:
        raise SubmissionError(f"the text expands to more than {_LIMITS.capture_bytes >> 20} MiB "
                              "when preprocessed", where="submission")
    output = read_output(proc.stdout.decode(errors="replace"), sentinel, _MARKED_OK)
    _check_macros(output.consulted, text)
    _check_tokens(output.lines, output.tokens)
    _check_emulator_names(output.tokens)
    headers = "".join(f"#include <{h}>\n" for h in entered if h in CUDA_HEADERS)
    device = headers + output.body   # which starts with the `#line` of its first line
    verdict.parent.mkdir(parents=True, exist_ok=True)
    partial = verdict.with_name(f"{verdict.name}.{os.getpid()}.tmp")
    partial.write_text(device)
    partial.replace(verdict)
    return device


# --------------------------------------------------------------------------------------------
# The preprocessor's output
# --------------------------------------------------------------------------------------------

_MACRO = re.compile(r"^#define (\w+)(?:\([^)]*\))? ?(.*)$", re.M)
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<text>.*)$", re.M)
_FILE_ERROR = re.compile(r"No such file|Permission denied|Is a directory|[/\\]")


def _raise_first_error(stderr: str) -> None:
    """The first error the preprocessor reports in the submission, as a SubmissionError. Only the
    submission's own lines and the message text come back: never a host file's contents."""
    for m in _ERROR.finditer(stderr):
        if Path(m["file"]).name != _SOURCE:
            break
        text = m["text"].strip()
        poisoned = re.match(r'attempt to use poisoned "(\w+)"', text)
        if poisoned:
            text = (f"{poisoned[1]!r} is not allowed in a kernel (inline assembly, pragmas and "
                    "header or compiler probes are refused however they are spelled or assembled)")
        elif _FILE_ERROR.search(text):
            text = "a header outside the allowed ones"
        raise SubmissionError(f"the preprocessor rejected the text: {text}", line=int(m["line"]))
    raise SubmissionError("the preprocessor rejected the text", where="submission")


def _entered(dependencies: Path) -> list[str]:
    """The allowed headers the preprocessor opened, in order, from its dependency list (written by
    the preprocessor, not by the text); a file other than the text, the prelude and the stubs is
    refused, and so is a missing list."""
    try:
        listed = dependencies.read_text().partition(":")[2].replace("\\\n", " ").split()
    except OSError:
        raise SubmissionError("the preprocessor did not say which files it read", where="submission") from None
    if not listed or not set(listed) <= _ENTERED_OK:
        raise SubmissionError("the text reaches a file that is not one of the allowed headers",
                              where="submission")
    return [name.removeprefix("include/") for name in listed if name.startswith("include/")]


def _check_macros(consulted: list[tuple[int, str, bool]], text: str) -> None:
    """No compiler macro whose meaning differs between NVRTC and g++ may be consulted: a
    predefined one (g++'s, or NVRTC's when g++ lacks it) not defined alike by both, nor a reserved
    name (`__x`, `_X`) that is tested undefined, since NVRTC may define it."""
    gcc, nvrtc, same = gcc_macros(), nvrtc_macros(), _same_in_both()
    for line, name, defined in consulted:
        predefined = name in gcc if defined else name in nvrtc
        reserved = name.startswith("__") or re.match(r"_[A-Z]", name) is not None
        if (predefined or (reserved and not defined)) and name not in same:
            raise SubmissionError(
                f"the text tests {name!r}, which NVRTC and the CPU emulator (g++) define differently "
                "(or only one of them defines): code that depends on it could compile differently "
                "for the gate and for the run, which must judge the same device code",
                line=_first_use(text, name) or line)


def _first_use(text: str, name: str) -> int | None:
    """The line where *name* first appears in *text* (`-dU` places its report only roughly)."""
    m = re.search(rf"\b{re.escape(name)}\b", text)
    return text.count("\n", 0, m.start()) + 1 if m else None


# --------------------------------------------------------------------------------------------
# The emulator's macros
# --------------------------------------------------------------------------------------------

#: Of the C library's macros, those NVRTC has as well (besides what its prelude defines).
_SHARED_LIBRARY_MACROS = frozenset({"NULL"})
_DEFINITION = re.compile(r'^# \d+ "(?P<file>[^"]*)"|^#(?P<kind>define|undef) (?P<name>\w+)', re.M)


@functools.cache
def refused_emulator_macros() -> frozenset[str]:
    """The macros the emulator's build defines that a text may not name: those of the C library
    headers its emulation header includes, and its own internals (`_X...`, `__MG_...`), less the
    ones NVRTC's prelude defines alike (`source_prep`) and NULL. Read from the emulation header
    preprocessed with `-dD` (our own text), once per runtime version, and remembered on disk."""
    remembered = cache_dir() / f"runtime-{runtime_version()}" / "emulator-macros.json"
    if remembered.exists():
        return frozenset(json.loads(remembered.read_text()))
    cmd = [compiler(), "-E", "-dD", "-x", "c++", *KERNEL_FLAGS, str(CSRC / EMULATION_HEADER)]
    proc = run_bounded(cmd, what="the preprocessor", limits=_LIMITS, cwd=CSRC)
    if proc.returncode != 0:
        raise InfrastructureError(f"preprocessing the emulation header failed: "
                                  f"{proc.stderr.decode(errors='replace')[-500:]}")
    origin: dict[str, str] = {}
    current = ""
    for m in _DEFINITION.finditer(proc.stdout.decode(errors="replace")):
        if m["file"] is not None:
            current = m["file"]
        elif m["kind"] == "define":
            origin[m["name"]] = current
        else:
            origin.pop(m["name"], None)
    ours = str(CSRC)
    refused = sorted(
        name for name, file in origin.items()
        if file not in ("<built-in>", "<command-line>")       # g++'s own: `_check_macros`
        and (not file.startswith(ours) or re.match(r"_[A-Z]|__mg_|__MG_", name))
        and name not in PRELUDE_MACROS and name not in _SHARED_LIBRARY_MACROS)
    remembered.parent.mkdir(parents=True, exist_ok=True)
    partial = remembered.with_name(f"{remembered.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(refused))
    partial.replace(remembered)
    return frozenset(refused)


def _check_emulator_names(tokens: list[Token]) -> None:
    """No identifier of the text names a macro only the emulator's build defines."""
    refused = refused_emulator_macros()
    for t in tokens:
        if t.kind == "ident" and t.text in refused:
            raise SubmissionError(
                f"{t.text!r} is a macro only the CPU emulator's headers define (its C library's, or "
                "its own internals), which NVRTC does not define alike: the gate and the run would "
                "compile different code", line=t.line)


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------

_CLOSE = {"(": ")", "[": "]"}


def _check_tokens(lines: list[tuple[int, str]], tokens: list[Token]) -> None:
    for line, text in lines:
        if re.match(r"#\s*pragma\b", text) and not re.match(r"#\s*pragma\s+(?:no)?unroll\b", text):
            raise SubmissionError(f"'{text[:80]}' is not allowed; the only pragmas are "
                                  "'#pragma unroll' and '#pragma nounroll'", line=line)
    words = [t.text for t in tokens]
    for i, t in enumerate(tokens):
        if t.text == "__declspec":
            raise SubmissionError("'__declspec' is not allowed", line=t.line)
        if t.text.startswith(("__mg_", "__MG_")):   # the emulator's entry points and internals
            raise SubmissionError(f"identifier {t.text!r} is not allowed: the '__mg_' prefix is "
                                  "reserved for the mutagym emulator", line=t.line)
        if t.text in ("__attribute__", "__attribute") and words[i + 1:i + 3] == ["(", "("]:
            _check_attribute_names(tokens, i + 3, _matching(words, i + 2))
        elif words[i:i + 2] == ["[", "["] and (i == 0 or words[i - 1] != "["):
            _check_attribute_names(tokens, i + 2, _matching(words, i + 1))


def _matching(words: list[str], i: int) -> int:
    """Index of the bracket that closes the one at *i* (len(words) when it is never closed)."""
    stack = []
    for j in range(i, len(words)):
        if words[j] in _CLOSE:
            stack.append(_CLOSE[words[j]])
        elif stack and words[j] == stack[-1]:
            stack.pop()
            if not stack:
                return j
    return len(words)


def _check_attribute_names(tokens: list[Token], start: int, end: int) -> None:
    """Every attribute named between *start* and *end* (a comma-separated list, each item
    `name`, `name(args)` or `ns::name(args)`) must be allowed."""
    words = [t.text for t in tokens]
    i = start
    while i < end:
        line, name = tokens[i].line, tokens[i].text
        if words[i + 1:i + 3] == [":", ":"]:
            i += 3
            line, name = (tokens[i].line, tokens[i].text) if i < end else (line, "")
        bare = name[2:-2] if len(name) > 4 and name.startswith("__") and name.endswith("__") else name
        if name and bare not in ALLOWED_ATTRIBUTES:
            raise SubmissionError(
                f"attribute {name!r} is not allowed (attributes such as 'section', 'ifunc', "
                "'constructor' and 'alias' can make code run when the kernel is loaded, and "
                "'no_sanitize_thread', 'optimize' and 'target' change how it is compiled); "
                f"allowed: {', '.join(sorted(ALLOWED_ATTRIBUTES))}", line=line)
        while i < end and words[i] != ",":   # to the next item
            i = _matching(words, i) + 1 if words[i] in _CLOSE else i + 1
        i += 1
