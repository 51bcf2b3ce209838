"""The static checks on what the compilers see: the submission preprocessed, twice.

The checks in `submission.py` read the raw text, with a lexer of our own; an adversary looks for
the places where that lexer and a compiler's disagree (a splice, a control character, a macro that
assembles a word). So the decisive checks run on the preprocessor's own output, in a bounded child
(`bounded.run_bounded`) that sees no host header: `-nostdinc`, and the allowed headers as empty
stubs in a private folder.

The text is preprocessed as the emulator will see it (g++'s own macros, plus the CUDA macros NVRTC
predefines, `emulator_macros`), and the preprocessor also reports every macro the text expanded
or tested (`-dU`). A compiler's macro whose meaning differs between NVRTC and g++ (`__CUDACC_RTC__`,
`__GNUC__`, `__x86_64__`, ...), or a reserved name neither defines the same way, may not be
consulted: such code could compile differently for the gate (NVRTC) and for the run (g++), which
would then judge different kernels. Then the stream is checked:

- `#pragma GCC poison` (in a prelude the submission cannot precede) turns every use of `asm`,
  `__has_include`, `_Pragma` and their spellings into an error, even when `##` assembles them;
- every file the preprocessor entered is the submission or an allowed stub (no host file);
- every attribute (`__attribute__((...))`, `[[...]]`) is one of `ALLOWED_ATTRIBUTES`: `section`,
  `ifunc`, `constructor`, `alias`, `target_clones` and the rest can make code run at load time or
  place bytes where the loader executes them; `__declspec` is refused;
- the only pragmas left are `unroll` and `nounroll`, and no identifier takes the emulator's
  reserved `__mg_` prefix.

Verdicts of texts that pass are remembered on disk (by hash of the text and of this check), so a
mutant pool or a judge that sees a text again pays nothing.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from .bounded import Limits, private_dir, run_bounded
from .errors import InfrastructureError, SubmissionError
from .headers import ALLOWED_HEADERS
from .toolchain import KERNEL_FLAGS, cache_dir, compiler

__all__ = ["ALLOWED_ATTRIBUTES", "POISONED", "check_preprocessed", "emulator_macros",
           "nvrtc_macros"]

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
#: A 256 KiB text preprocesses in tens of milliseconds and a few tens of MB; a bomb stops here.
#: Its output is read whole up to `capture_bytes`; a text that expands past that is refused (a
#: difference or an attribute beyond the part read would go unseen).
_LIMITS = Limits(wall_s=10.0, cpu_s=5, memory_bytes=256 << 20, file_bytes=1 << 20,
                 capture_bytes=8 << 20)
#: Bumped whenever what this module checks changes: it names the on-disk verdicts.
_CHECK_VERSION = "4"

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


_COMMON = ["-E", "-dU", "-x", "c++", "-nostdinc", "-I", "include", "-include", _PRELUDE]


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


def check_preprocessed(text: str) -> None:
    """Raise `SubmissionError` (naming the line) unless *text* passes the checks above."""
    verdict = _verdict_path(text)
    if verdict.exists():
        return
    with private_dir("mutagym-check-") as folder:
        (folder / _SOURCE).write_text(text)
        (folder / _PRELUDE).write_text(f"#pragma GCC poison {' '.join(POISONED)}\n")
        (folder / "include").mkdir()
        for header in ALLOWED_HEADERS:
            (folder / "include" / header).parent.mkdir(exist_ok=True)
            (folder / "include" / header).write_text("")
        proc = run_bounded(_command(), what="the preprocessor", limits=_LIMITS, cwd=folder)
    if proc.returncode != 0:
        _raise_first_error(proc.stderr.decode(errors="replace"))
    if len(proc.stdout) >= _LIMITS.capture_bytes:
        raise SubmissionError(f"the text expands to more than {_LIMITS.capture_bytes >> 20} MiB "
                              "when preprocessed", where="submission")
    view, consulted = _submission_lines(proc.stdout.decode(errors="replace"))
    _check_macros(consulted, text)
    _check_tokens(view)
    verdict.parent.mkdir(parents=True, exist_ok=True)
    verdict.touch()


# --------------------------------------------------------------------------------------------
# The preprocessor's output
# --------------------------------------------------------------------------------------------

_MACRO = re.compile(r"^#define (\w+)(?:\([^)]*\))? ?(.*)$", re.M)
_USED = re.compile(r"^#(?P<kind>define|undef) (?P<name>\w+)")
_LINEMARKER = re.compile(r'^# (?P<line>\d+) "(?P<file>(?:[^"\\]|\\.)*)"(?P<flags>[ \d]*)$')
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<text>.*)$", re.M)
_FILE_ERROR = re.compile(r"No such file|Permission denied|Is a directory|[/\\]")
_ENTERED_OK = {_SOURCE, f"./{_PRELUDE}", "<built-in>", "<command-line>"}


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


def _submission_lines(output: str) -> tuple[list[tuple[int, str]], list[tuple[int, str, bool]]]:
    """(submission line, text) of every non-blank output line that comes from the submission, and
    (line, name, defined) of every macro `-dU` says it expanded or tested; a file other than the
    submission and the allowed stubs is refused."""
    lines, consulted, current, number = [], [], "", 0
    for raw in output.split("\n"):
        marker = _LINEMARKER.match(raw)
        if marker:
            current, number = marker["file"], int(marker["line"])
            if current not in _ENTERED_OK and current.removeprefix("include/") not in ALLOWED_HEADERS:
                raise SubmissionError("the text reaches a file that is not one of the allowed "
                                      "headers", where="submission")
            continue
        if current == _SOURCE and (macro := _USED.match(raw)):
            consulted.append((number, macro["name"], macro["kind"] == "define"))
        elif raw.strip() and current == _SOURCE:
            lines.append((number, " ".join(raw.split())))
        number += 1
    return lines, consulted


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
# Tokens
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
      (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)")
    | (?P<str>(?:u8|[uUL])?"(?:\\.|[^"\\])*")
    | (?P<chr>(?:u8|[uUL])?'(?:\\.|[^'\\])*')
    | (?P<num>\.?\d(?:[eEpP][+-]|'\w|[\w.])*)
    | (?P<ident>[A-Za-z_$][\w$]*)
    | (?P<punct>\S)
""", re.S | re.X)
_CLOSE = {"(": ")", "[": "]"}


def _tokens(view: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line, text) of every token of the submission's preprocessed lines (literals whole)."""
    return [(line, m.group()) for line, text in view for m in _TOKEN.finditer(text)]


def _check_tokens(view: list[tuple[int, str]]) -> None:
    for line, text in view:
        if re.match(r"#\s*pragma\b", text) and not re.match(r"#\s*pragma\s+(?:no)?unroll\b", text):
            raise SubmissionError(f"'{text[:80]}' is not allowed; the only pragmas are "
                                  "'#pragma unroll' and '#pragma nounroll'", line=line)
    tokens = _tokens(view)
    words = [t for _, t in tokens]
    for i, (line, text) in enumerate(tokens):
        if text == "__declspec":
            raise SubmissionError("'__declspec' is not allowed", line=line)
        if text.startswith("__mg_"):   # the emulator's entry points run before the last filter
            raise SubmissionError(f"identifier {text!r} is not allowed: the '__mg_' prefix is "
                                  "reserved for the mutagym emulator", line=line)
        if text in ("__attribute__", "__attribute") and words[i + 1:i + 3] == ["(", "("]:
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


def _check_attribute_names(tokens: list[tuple[int, str]], start: int, end: int) -> None:
    """Every attribute named between *start* and *end* (a comma-separated list, each item
    `name`, `name(args)` or `ns::name(args)`) must be allowed."""
    words = [t for _, t in tokens]
    i = start
    while i < end:
        line, name = tokens[i]
        if words[i + 1:i + 3] == [":", ":"]:
            i += 3
            line, name = tokens[i] if i < end else (line, "")
        bare = name[2:-2] if len(name) > 4 and name.startswith("__") and name.endswith("__") else name
        if name and bare not in ALLOWED_ATTRIBUTES:
            raise SubmissionError(
                f"attribute {name!r} is not allowed (attributes such as 'section', 'ifunc', "
                "'constructor' and 'alias' can make code run when the kernel is loaded); "
                f"allowed: {', '.join(sorted(ALLOWED_ATTRIBUTES))}", line=line)
        while i < end and words[i] != ",":   # to the next item
            i = _matching(words, i) + 1 if words[i] in _CLOSE else i + 1
        i += 1
