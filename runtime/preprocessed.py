"""The static checks on what the compilers see: the submission preprocessed, twice.

The checks in `submission.py` read the raw text, with a lexer of our own; an adversary looks for
the places where that lexer and a compiler's disagree (a splice, a control character, a macro that
assembles a word). So the decisive checks run on the preprocessor's own output, in a bounded child
(`bounded.run_bounded`) that sees no host header: `-nostdinc`, and the allowed headers as empty
stubs in a private folder.

The text is preprocessed as each compiler will see it: once with the macros NVRTC predefines
(`__CUDACC_RTC__`, `__CUDA_ARCH__`, ...) and once with g++'s own macros plus the CUDA macros the
emulator defines (`emulator_macros`). The two token streams must be the same: code that NVRTC and
the emulator would compile differently is refused, since the gate (NVRTC) and the run (g++) would
judge different kernels. Then the stream is checked:

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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .bounded import Limits, private_dir, run_bounded
from .errors import SubmissionError
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
            "__builtin_return_address", "__builtin_frame_address", "__builtin_extract_return_addr",
            "__builtin_eh_return", "__builtin_apply", "__builtin_apply_args", "__builtin_longjmp",
            "__builtin_setjmp", "__builtin_unwind_init")
#: The allowed headers, as the check sees them: empty, so only the submission's tokens remain.
_STUB_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "stdint.h", "math.h", "cstdint", "cmath")
_PRELUDE = "mutagym-checks.h"
_SOURCE = "submission.cu"
#: A 256 KiB text preprocesses in tens of milliseconds and a few tens of MB; a bomb stops here.
#: Its output is read whole up to `capture_bytes`; a text that expands past that is refused (a
#: difference or an attribute beyond the part read would go unseen).
_LIMITS = Limits(wall_s=10.0, cpu_s=5, memory_bytes=256 << 20, file_bytes=1 << 20,
                 capture_bytes=8 << 20)
#: The two views are preprocessed at the same time (two children, one wall clock).
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mutagym-preprocess")
#: Bumped whenever what this module checks changes: it names the on-disk verdicts.
_CHECK_VERSION = "2"

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
    }


@functools.cache
def emulator_macros() -> dict[str, str]:
    """The CUDA macros the emulator's build defines: NVRTC's, less `__CUDACC_RTC__`, so that
    `#if __CUDA_ARCH__ >= 700` takes the same branch in the gate and in the run."""
    return {k: v for k, v in nvrtc_macros().items() if k != "__CUDACC_RTC__"}


def _view_commands() -> dict[str, list[str]]:
    common = ["-E", "-x", "c++", "-nostdinc", "-I", "include", "-include", _PRELUDE]
    defines = lambda macros: [f"-D{k}={v}" for k, v in macros.items()]  # noqa: E731
    return {
        "NVRTC": [compiler(), *common, "-std=c++17", "-undef", *defines(nvrtc_macros()), _SOURCE],
        "the CPU emulator": [compiler(), *common, *KERNEL_FLAGS, *defines(emulator_macros()), _SOURCE],
    }


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
        for header in _STUB_HEADERS:
            (folder / "include" / header).write_text("")
        commands = _view_commands()
        runs = [_POOL.submit(run_bounded, cmd, what="the preprocessor", limits=_LIMITS, cwd=folder)
                for cmd in commands.values()]
        views = []
        for view, run in zip(commands, runs):
            proc = run.result()
            if proc.returncode != 0:
                _raise_first_error(proc.stderr.decode(errors="replace"), view)
            if len(proc.stdout) >= _LIMITS.capture_bytes:
                raise SubmissionError(f"the text expands to more than {_LIMITS.capture_bytes >> 20} "
                                      "MiB when preprocessed", where="submission")
            views.append(_submission_lines(proc.stdout.decode(errors="replace")))
    nvrtc_view, emulator_view = views
    _compare(nvrtc_view, emulator_view)
    _check_tokens(emulator_view)
    verdict.parent.mkdir(parents=True, exist_ok=True)
    verdict.touch()


# --------------------------------------------------------------------------------------------
# The preprocessor's output
# --------------------------------------------------------------------------------------------

_LINEMARKER = re.compile(r'^# (?P<line>\d+) "(?P<file>(?:[^"\\]|\\.)*)"(?P<flags>[ \d]*)$')
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<text>.*)$", re.M)
_FILE_ERROR = re.compile(r"No such file|Permission denied|Is a directory|[/\\]")
_ENTERED_OK = {_SOURCE, f"./{_PRELUDE}", "<built-in>", "<command-line>"}


def _raise_first_error(stderr: str, view: str) -> None:
    """The first error the preprocessor reports in the submission, as a SubmissionError. Only the
    submission's own lines and the message text come back: never a host file's contents."""
    for m in _ERROR.finditer(stderr):
        if Path(m["file"]).name != _SOURCE:
            break
        text = m["text"].strip()
        poisoned = re.match(r'attempt to use poisoned "(\w+)"', text)
        if poisoned:
            text = (f"{poisoned[1]!r} is not allowed in a kernel (inline assembly, pragmas and "
                    "header probes are refused however they are spelled or assembled)")
        elif _FILE_ERROR.search(text):
            text = "a header outside the allowed ones"
        raise SubmissionError(f"as {view} preprocesses it: {text}", line=int(m["line"]))
    raise SubmissionError(f"{view}'s preprocessor rejected the text", where="submission")


def _submission_lines(output: str) -> list[tuple[int, str]]:
    """(submission line, text) of every non-blank output line that comes from the submission;
    a file other than the submission and the allowed stubs is refused."""
    lines, current, number = [], "", 0
    for raw in output.split("\n"):
        marker = _LINEMARKER.match(raw)
        if marker:
            current, number = marker["file"], int(marker["line"])
            if current not in _ENTERED_OK and current.removeprefix("include/") not in _STUB_HEADERS:
                raise SubmissionError("the text reaches a file that is not one of the allowed "
                                      "headers", where="submission")
            continue
        if raw.strip() and current == _SOURCE:
            lines.append((number, " ".join(raw.split())))
        number += 1
    return lines


def _compare(nvrtc_view: list[tuple[int, str]], emulator_view: list[tuple[int, str]]) -> None:
    for (line_a, a), (line_b, b) in zip(nvrtc_view, emulator_view):
        if a != b:
            line = min(line_a, line_b)
            break
    else:
        if len(nvrtc_view) == len(emulator_view):
            return
        line = (nvrtc_view[len(emulator_view)] if len(nvrtc_view) > len(emulator_view)
                else emulator_view[len(nvrtc_view)])[0]
    raise SubmissionError(
        "NVRTC and the CPU emulator would compile different code here (a conditional on "
        "__CUDACC_RTC__ or on a macro only one compiler defines, such as __GNUC__): the gate and "
        "the run must judge the same device code", line=line)


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
