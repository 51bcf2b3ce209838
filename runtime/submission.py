"""Parse a kernel submission: the `/* mutagym */` launch block, static checks and kernel signatures.

A submission is one untrusted text (docs/launch-block.md): CUDA C++ device code led by a TOML
block in a comment that says how to launch it. `parse_submission` turns it into a `Submission` or
raises a `SubmissionError` naming the line at fault, before anything is built.

Kernel signatures are read from the text where its words name the types (`const float* x`);
where they do not (a typedef, a macro, a `using` alias, a template parameter), g++ is asked,
once the static checks have passed the text (`signature_probe`).

The static checks are the first of several walls (the sandboxed child process is the last): they
refuse what no kernel needs (headers beyond the math and half-precision ones, inline assembly,
OS and heap calls, host launch syntax) so that the common cases fail early with a clear message.
They read the source as the compiler does: line splices joined, comments and the contents of
string and character literals blanked, so neither `as\\<newline>m` nor a comment hides anything.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from .errors import LaunchError, SubmissionError
from .expressions import Expr, did_you_mean, parse_expression
from .headers import ALLOWED_HEADERS
from .preprocessed import check_preprocessed
from .signature_probe import ProbeError, kernel_types, split_top_level

#: Largest accepted submission, in UTF-8 bytes.
MAX_SUBMISSION_BYTES = 256 * 1024
#: Largest `/* mutagym */` block: a launch plan is a few tables, not a document.
MAX_LAUNCH_BLOCK_CHARS = 16 * 1024
#: Element types a `[[scratch]]` buffer may have.
SCRATCH_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                  "uint8", "uint16", "uint32", "uint64")

# CUDA launch limits (compute capability 7.0 and later).
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
#: Dynamic shared memory a launch may request without opting in to more (48 KiB).
MAX_DYNAMIC_SHARED_BYTES = 48 * 1024

# C type of a kernel parameter (normalized spelling) -> (dtype, vector width).
_SCALAR_CTYPES = {
    "float": "float32", "double": "float64",
    "__half": "float16", "half": "float16", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16",
    "int": "int32", "int32_t": "int32", "unsigned int": "uint32", "uint32_t": "uint32",
    "long": "int64", "long long": "int64", "int64_t": "int64",
    "unsigned long": "uint64", "unsigned long long": "uint64", "uint64_t": "uint64",
    "size_t": "uint64", "uint": "uint32", "ushort": "uint16", "ulong": "uint64",
    "short": "int16", "int16_t": "int16", "unsigned short": "uint16", "uint16_t": "uint16",
    "char": "int8", "signed char": "int8", "int8_t": "int8",
    "unsigned char": "uint8", "uint8_t": "uint8", "bool": "bool",
}
_VECTOR_COMPONENTS = {"char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16",
                      "int": "int32", "uint": "uint32", "long": "int64", "ulong": "uint64",
                      "longlong": "int64", "ulonglong": "uint64", "float": "float32",
                      "double": "float64"}
CTYPES: dict[str, tuple[str, int]] = {
    **{ctype: (dtype, 1) for ctype, dtype in _SCALAR_CTYPES.items()},
    **{f"{base}{n}": (dtype, n) for base, dtype in _VECTOR_COMPONENTS.items()
       for n in (1, 2, 3, 4)},
    "__half2": ("float16", 2), "half2": ("float16", 2),
    "__nv_bfloat162": ("bfloat16", 2), "nv_bfloat162": ("bfloat16", 2),
}
_INTEGER_WORDS = {"unsigned", "signed", "long", "short", "int", "char"}
_C_TYPE_WORDS = _INTEGER_WORDS | {"float", "double", "bool", "void"}
_PARAM_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict",
                     "__grid_constant__", "struct"}

# Intrinsics that make threads of a block or warp wait for each other, and the cooperative-groups
# namespace (its groups sync, shuffle, vote and reduce on the same barriers and collectives, and
# every use of it names it), and the warp matrix API (its loads, stores and products are warp
# collectives; every use names `nvcuda`): a kernel that names one needs the emulator's fibers.
# Redefining one with #define is refused.
_BARRIER = re.compile(r"\b(?:__syncthreads(?:_count|_and|_or)?|__syncwarp|__activemask"
                      r"|__shfl(?:_up|_down|_xor)?(?:_sync)?|__ballot(?:_sync)?"
                      r"|__any(?:_sync)?|__all(?:_sync)?|__match_(?:any|all)_sync"
                      r"|__reduce_(?:add|min|max|and|or|xor)_sync|cooperative_groups|nvcuda"
                      r"|(?:load|store)_matrix_sync|mma_sync)\b")
_BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__global__",
             "__device__", "__shared__"}
_DIRECTIVES = {"", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef",
               "else", "endif", "include", "pragma", "error", "warning"}

_HEAP = ("{name!r} allocates on the device heap, which mutagym does not support; declare a "
         "[[scratch]] buffer instead")
_OS = "{name!r} is a host/OS call; kernel code may only compute on its buffers"
_CUDA_HOST = ("{name!r} is a CUDA host API call; a submission holds device code only and "
              "declares its launches in the /* mutagym */ block")
# Identifiers refused in the code: word -> (when, message). `when` is "always", "unless_member"
# (allowed only as `obj.word` / `p->word`, which cannot be the C library's) or "call" (refused
# when followed by "(" and not a member: `read` and `write` are also fine variable names).
_REFUSED_WORDS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("asm", "__asm__", "__asm"),
                    ("always", "inline assembly ({name!r}) is not allowed")),
    **dict.fromkeys(("__has_include", "__has_include_next"),
                    ("always", "{name!r} is not allowed: a kernel cannot probe the host's files")),
    "_Pragma": ("always", "{name!r} is not allowed; the only pragmas are '#pragma unroll' and "
                          "'#pragma nounroll'"),
    **dict.fromkeys(("new", "delete"), ("always", _HEAP)),
    **dict.fromkeys(("malloc", "calloc", "realloc"), ("unless_member", _HEAP)),
    "free": ("call", _HEAP),
    **dict.fromkeys(("system", "fork", "vfork", "execl", "execlp", "execle", "execv", "execvp",
                     "execvpe", "execve", "execveat", "fexecve", "popen", "openat", "fopen", "mmap",
                     "munmap", "mprotect", "syscall", "socket", "dlopen", "dlsym"),
                    ("unless_member", _OS)),
    **dict.fromkeys(("open", "read", "write", "connect", "kill", "signal"), ("call", _OS)),
    "main": ("call", "{name!r} is host code; a submission holds device code only"),
}
_RESERVED_PREFIX = ("always", "identifier {name!r} is not allowed: the '__mg_' prefix is "
                              "reserved for the mutagym emulator")
_PASTE = "token pasting ({!r}) is not allowed: it can assemble identifiers these checks refuse"
_REFUSED_TOKENS = {
    "##": _PASTE.format("##"),
    "%:%:": _PASTE.format("%:%:"),
    "<<<": "launch syntax '<<<' is not allowed; declare launches as [[launch]] tables in the "
           "/* mutagym */ block",
}
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")
_CUDA_HOST_NAME = re.compile(r"cuda[A-Z]\w*")
_MEMBER_ACCESS = re.compile(r"(?:\.|->)\s*\Z")


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    """One kernel parameter: *ctype* as normalized from the source (`"unsigned int"`), *dtype*
    the numpy name of its element type, *const* whether a pointer's pointee is const (always
    False for values), *vector_width* the lanes of a CUDA vector type (`float4`: 4), else 1."""

    name: str
    ctype: str
    dtype: str
    pointer: bool
    const: bool
    vector_width: int = 1

    def __str__(self) -> str:
        const, star = "const " if self.const else "", "*" if self.pointer else ""
        return f"{const}{self.ctype}{star} {self.name}"


@dataclass(frozen=True)
class KernelSignature:
    """A `__global__ void` kernel defined in the submission at 1-based *line*; *name* is the
    launch's kernel (`relu`, or a template's instantiation `sgemm<32, 32, 8>`)."""

    name: str
    params: tuple[Param, ...]
    line: int

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(p) for p in self.params)})"


@dataclass(frozen=True)
class Argument:
    """One `args` entry as written (*text*), parsed: *kind* "name" (an input, output, scratch
    buffer, dim or scalar: *name*), "null" (a null pointer), "offset" (*name* is the buffer or
    value the expression starts from, *expr* the whole `name + elements`; which one it is is known
    only when the names are bound) or "value" (*expr* the integer expression, None when the text
    is one only as a real expression). *real* is the text as a real expression (for a float or
    double parameter), None when it is not one."""

    text: str
    kind: str
    name: str | None = None
    offset: Expr | None = None
    expr: Expr | None = None
    real: Expr | None = None


@dataclass(frozen=True)
class Fill:
    """`fill = {name = value}` of a launch: *buffer* holds *value* in every element before the
    launch (a TOML number, or an integer expression in *expr*)."""

    buffer: str
    value: float | int | None
    expr: Expr | None
    launch: int
    line: int


@dataclass(frozen=True)
class InOut:
    """`inout`: the kernel updates *input* in place; output *output* (None: the one output of
    the input's shape and dtype) starts as a copy of it and the launches' *input* names it."""

    input: str
    output: str | None
    line: int


@dataclass(frozen=True)
class ConstantBinding:
    """`constant = {symbol = "input"}`: the `__constant__` array *symbol* holds the bytes of
    problem input *input* before the first launch."""

    symbol: str
    input: str
    line: int


@dataclass(frozen=True)
class Launch:
    """One `[[launch]]` table (the *index*-th, 0-based, declared at *line*). *kernel* is the
    kernel's name, or a template kernel's instantiation as normalized (`sgemm<32, 32, 8>`)."""

    index: int
    kernel: str
    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    shared_bytes: Expr
    args: tuple[str, ...]
    line: int
    arguments: tuple[Argument, ...] = ()
    fills: tuple[Fill, ...] = ()


@dataclass(frozen=True)
class Scratch:
    """One `[[scratch]]` table: a device buffer of *size* elements, poisoned or zeroed."""

    name: str
    dtype: str
    size: Expr
    init: str
    line: int


@dataclass(frozen=True)
class Submission:
    """A parsed, statically checked submission. Instances are cached and shared: never mutate
    `kernels`."""

    source: str = field(repr=False)
    sha256: str
    launches: tuple[Launch, ...]
    scratch: tuple[Scratch, ...]
    kernels: dict[str, KernelSignature] = field(hash=False)
    uses_barriers: bool
    includes: tuple[str, ...]
    inout: tuple[InOut, ...] = ()
    constants: tuple[ConstantBinding, ...] = ()
    #: What NVRTC and the emulator compile: the text as the preprocessing check left it, its own
    #: macros resolved (`preprocessed.check_preprocessed`).
    device_text: str = field(default="", repr=False)

    @property
    def symbols(self) -> tuple[str, ...]:
        """What the compiled code must provide by name: each launched kernel (a template's
        instantiation as written in the launch) and each bound `__constant__` array. NVRTC
        instantiates and lowers them as name expressions (`nvrtc_compile(names=...)`)."""
        return tuple(dict.fromkeys([l.kernel for l in self.launches]
                                   + [c.symbol for c in self.constants]))


def parse_submission(source: str | bytes) -> Submission:
    """Parse and check *source*; raise SubmissionError (or LaunchError for a constant launch
    shape no GPU accepts) naming the line at fault. Results are cached by text.

    >>> sub = parse_submission('''/* mutagym
    ... [[launch]]
    ... kernel = "relu"
    ... grid = ["ceil_div(n, 256)"]
    ... block = [256]
    ... args = ["x", "out", "n"]
    ... */
    ... extern "C" __global__ void relu(const float* x, float* out, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) out[i] = x[i] > 0.f ? x[i] : 0.f;
    ... }''')
    >>> str(sub.kernels["relu"]), sub.launches[0].grid[0].evaluate({"n": 1000}), sub.uses_barriers
    ('relu(const float* x, float* out, int n)', 4, False)
    """
    try:
        return _parse_text(_as_text(source))
    except RecursionError:
        raise SubmissionError("the text nests too deeply to be parsed (brackets, parentheses or "
                              "TOML arrays inside one another)", where="submission") from None


def strip_comments_and_strings(source: str) -> str:
    """Return *source* with comments and the contents of string and character literals replaced
    by spaces: same length, same line breaks, so offsets and line numbers still match.

    >>> strip_comments_and_strings('f("a;b"); // x\\n/* y */ g();')
    'f("   ");     \\n        g();'
    """
    return _Scan(source).restore()


# --------------------------------------------------------------------------------------------
# Text checks and the cached parse
# --------------------------------------------------------------------------------------------

def _as_text(source: str | bytes) -> str:
    """Refuse anything that is not a non-empty, bounded UTF-8 text without NUL characters."""
    if isinstance(source, (bytes, bytearray)):
        _check_size(len(source))
        try:
            text = bytes(source).decode("utf-8")
        except UnicodeDecodeError as err:
            line = source.count(b"\n", 0, err.start) + 1
            raise SubmissionError(f"text is not UTF-8: byte {source[err.start]:#04x} "
                                  f"at offset {err.start} cannot be decoded", line=line) from None
    elif isinstance(source, str):
        try:
            _check_size(len(source.encode("utf-8")))
        except UnicodeEncodeError as err:
            line = source.count("\n", 0, err.start) + 1
            raise SubmissionError(f"text is not valid Unicode: {source[err.start]!r} at "
                                  f"offset {err.start} is a lone surrogate", line=line) from None
        text = source
    else:
        raise SubmissionError(f"a submission is a str or bytes, got {type(source).__name__}",
                              where="submission")
    if "\0" in text:
        raise SubmissionError("text contains a NUL character ('\\x00')",
                              line=text.count("\n", 0, text.index("\0")) + 1)
    if control := _CONTROL.search(text):
        raise SubmissionError(f"control character {control.group()[0]!r} is not allowed: form "
                              "feeds, vertical tabs and lone carriage returns change where a "
                              "compiler sees lines and directives begin",
                              line=text.count("\n", 0, control.start()) + 1)
    if not text.strip():
        raise SubmissionError(f"text is empty ({text!r})", where="submission")
    return text


#: C0 control characters other than tab and newline (and carriage return before a newline).
_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)")


def _check_size(nbytes: int) -> None:
    if nbytes > MAX_SUBMISSION_BYTES:
        raise SubmissionError(f"text is {nbytes} bytes; at most "
                              f"{MAX_SUBMISSION_BYTES} (256 KiB) are accepted", where="submission")


@functools.lru_cache(maxsize=256)
def _parse_text(text: str) -> Submission:
    """The parse proper, cached on the text (equal texts have equal sha256)."""
    scan = _Scan(text)
    includes = _static_checks(scan)
    block = _LaunchBlock(scan)
    table = _KernelTable(scan)
    launches = tuple(table.bind(_read_launch(i, t, block),
                                functools.partial(block.key_line, "launch", i))
                     for i, t in enumerate(block.tables("launch")))
    scratch = tuple(_read_scratch(i, t, block) for i, t in enumerate(block.tables("scratch")))
    inout = _read_inout(block)
    constants = _read_constants(block, scan)
    seen: dict[str, int] = {}
    for s in scratch:
        if s.name in seen:
            raise SubmissionError(f"scratch buffer {s.name!r} is declared twice (lines "
                                  f"{seen[s.name]} and {s.line})", line=s.line, where="scratch")
        seen[s.name] = s.line
    _check_fills(launches, inout)
    device_text = check_preprocessed(text)
    table.resolve(device_text)   # the compiler reads the text only once the checks above have passed it
    return Submission(source=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                      launches=launches, scratch=scratch, kernels=table.signatures,
                      uses_barriers=_BARRIER.search(strip_comments_and_strings(device_text)) is not None
                      or any(h.startswith("cooperative_groups") for h in includes), includes=includes,
                      inout=inout, constants=constants, device_text=device_text)


# --------------------------------------------------------------------------------------------
# Lexing: what the compiler sees
# --------------------------------------------------------------------------------------------

_SPLICE = re.compile(r"\\[ \t]*\r?\n")  # GCC also splices "\\ <newline>"
_LEX = re.compile(r"""
      (?P<raw>\b(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)")
    | (?P<line>//[^\n]*)
    | (?P<rawopen>\b(?:u8|[uUL])?R")
    | (?P<block>/\*.*?\*/)
    | (?P<open>/\*)
    | (?P<str>"(?:\\.|[^"\\\n])*(?P<strend>")?)
    | (?P<chr>'(?:\\.|[^'\\\n])*(?P<chrend>')?)
    | (?P<num>\.?\d(?:[eEpP][+-]|'\w|[\w.])*)
    | (?P<ident>[A-Za-z_]\w*)
""", re.S | re.X)
_NOT_NEWLINE = re.compile(r"[^\r\n]")


class _Scan:
    """*source* as the compiler reads it.

    `logical` has line splices (backslash-newline) removed; `code` is `logical` with comments and
    literal contents blanked, `nocomment` with only comments blanked. All three share offsets;
    `line(i)` maps an offset back to the 1-based line of the original text. `comments` lists the
    `(start, end)` offsets of block comments.
    """

    def __init__(self, source: str):
        self.source = source
        pieces, self._splice_at, self._splice_text, self._shift = [], [], [], []
        last = removed = 0
        for m in _SPLICE.finditer(source):
            pieces.append(source[last:m.start()])
            self._splice_at.append(m.start() - removed)
            self._splice_text.append(m.group())
            removed += len(m.group())
            self._shift.append(removed)
            last = m.end()
        pieces.append(source[last:])
        self.logical = "".join(pieces)
        self._newlines = [m.start() for m in re.finditer("\n", source)]

        self.comments: list[tuple[int, int]] = []
        code_blanks, comment_blanks = [], []
        for m in _LEX.finditer(self.logical):
            kind, start, end = m.lastgroup, m.start(), m.end()
            if kind in ("open", "rawopen"):
                what = "/* comment" if kind == "open" else "raw string literal"
                raise SubmissionError(f"unterminated {what}", line=self.line(start))
            if kind in ("line", "block"):
                comment_blanks.append((start, end))
                code_blanks.append((start, end))
                if kind == "block":
                    self.comments.append((start, end))
            elif kind in ("str", "chr", "raw"):
                quote = self.logical.index('"', start) if kind == "raw" else start
                closed = kind == "raw" or m["strend"] or m["chrend"]
                code_blanks.append((quote + 1, end - 1 if closed else end))
        self._code_blanks = code_blanks
        self.nocomment = _blank(self.logical, comment_blanks)
        self.code = _blank(self.logical, code_blanks)

    def original(self, i: int) -> int:
        """Offset in `source` of offset *i* of the logical text."""
        k = bisect.bisect_right(self._splice_at, i)
        return i + (self._shift[k - 1] if k else 0)

    def line(self, i: int) -> int:
        """1-based source line of logical offset *i*."""
        return self.source_line(self.original(i))

    def source_line(self, offset: int) -> int:
        """1-based line of *offset* in `source`."""
        return bisect.bisect_left(self._newlines, offset) + 1

    def restore(self) -> str:
        """The `code` view with line splices put back, in the coordinates of `source`."""
        pieces, last = [], 0
        starts = [s for s, _ in self._code_blanks]
        for at, text in zip(self._splice_at, self._splice_text):
            pieces.append(self.code[last:at])
            k = bisect.bisect_right(starts, at - 1)
            inside = k and self._code_blanks[k - 1][0] < at < self._code_blanks[k - 1][1]
            pieces.append(" " + text[1:] if inside else text)
            last = at
        pieces.append(self.code[last:])
        return "".join(pieces)


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        blanked = text[start:end]
        pieces.append(_NOT_NEWLINE.sub(" ", blanked) if "\n" in blanked or "\r" in blanked
                      else " " * len(blanked))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


# --------------------------------------------------------------------------------------------
# Static checks
# --------------------------------------------------------------------------------------------

_DIRECTIVE = re.compile(r"(?m)^[ \t]*(?:#|%:)[ \t]*(?P<name>\w*)(?P<rest>.*)$")
_INCLUDE = re.compile(r'<(?P<angle>[^<>]*)>|"(?P<quote>[^"]*)"')


def _static_checks(scan: _Scan) -> tuple[str, ...]:
    """Raise on the first forbidden construct (by position); return the included headers."""
    findings: list[tuple[int, str]] = []
    includes: list[str] = []
    for m in _DIRECTIVE.finditer(scan.code):
        name, at = m["name"], m.start("name")
        rest = scan.nocomment[m.start("rest"):m.end("rest")].strip()
        if name not in _DIRECTIVES:
            findings.append((at, f"preprocessor directive '#{name}' is not allowed; allowed: "
                                 f"{', '.join('#' + d for d in sorted(_DIRECTIVES) if d)}"))
        elif name == "include":
            header = _INCLUDE.fullmatch(rest)
            header_name = header and (header["angle"] or header["quote"])
            if header_name not in ALLOWED_HEADERS:
                findings.append((at, f"#include {rest!r} is not allowed; allowed headers: "
                                     f"{', '.join(ALLOWED_HEADERS)}"))
            elif header_name not in includes:
                includes.append(header_name)
        elif name == "pragma":
            words = rest.split()
            if not words or re.match(r"(?:no)?unroll\b", words[0]) is None:
                findings.append((at, f"#pragma {rest!r} is not allowed; the only pragmas are "
                                     "'#pragma unroll' and '#pragma nounroll'"))
        elif name in ("define", "undef"):
            defined = re.match(r"\s*(\w+)", m["rest"])
            if defined and (defined[1] in _BUILTINS or _BARRIER.fullmatch(defined[1])):
                findings.append((at, f"#{name} of {defined[1]!r} is not allowed: CUDA built-ins "
                                     "must keep their meaning"))
    for token, message in _REFUSED_TOKENS.items():
        if (at := scan.code.find(token)) >= 0:
            findings.append((at, message))
    if (refused := _first_refused_word(scan.code)) is not None:
        findings.append(refused)
    if findings:
        at, message = min(findings)
        raise SubmissionError(message, line=scan.line(at))
    return tuple(includes)


def _first_refused_word(code: str) -> tuple[int, str] | None:
    """(offset, message) of the first identifier `_REFUSED_WORDS` refuses, or None."""
    for m in _IDENTIFIER.finditer(code):
        word = m.group()
        rule = _REFUSED_WORDS.get(word)
        if rule is None and word.startswith("__mg_"):
            rule = _RESERVED_PREFIX
        elif rule is None and _CUDA_HOST_NAME.fullmatch(word):
            rule = ("call", _CUDA_HOST)
        if rule is None:
            continue
        when, message = rule
        if when != "always" and _MEMBER_ACCESS.search(code, max(0, m.start() - 64), m.start()):
            continue
        if when == "call" and not _OPEN_PAREN.match(code, m.end()):
            continue
        return m.start(), message.format(name=word)
    return None


# --------------------------------------------------------------------------------------------
# The /* mutagym */ block
# --------------------------------------------------------------------------------------------

_TOML_LOCATION = re.compile(r"^(?P<msg>.*) \((?:at line (?P<line>\d+), column (?P<col>\d+)"
                            r"|at end of document)\)$", re.S)
_TABLE_HEADER = re.compile(r"^\s*\[")
_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*(?P<name>[^\[\]]*?)\s*\]\]")
_TOP_KEYS = ("launch", "scratch", "inout", "constant")
_LAUNCH_KEYS = ("kernel", "grid", "block", "shared_bytes", "args", "fill")
_SCRATCH_KEYS = ("name", "dtype", "size", "init")


class _LaunchBlock:
    """The TOML document in the `/* mutagym */` comment, with the submission line of each of its
    lines: tomllib reports no positions for valid documents, so keys are found by scanning."""

    def __init__(self, scan: _Scan):
        found = []
        for start, end in scan.comments:
            o_start, o_end = scan.original(start), scan.original(end - 1) + 1
            word = re.match(r"\s*mutagym(?=\s|$)", scan.source[o_start + 2:o_end - 2])
            if word:
                found.append((o_start + 2 + word.end(), o_end - 2))
        if not found:
            raise SubmissionError("no /* mutagym ... */ block found; a submission starts with a "
                                  "comment holding its [[launch]] tables", line=1)
        if len(found) > 1:
            raise SubmissionError(f"a second /* mutagym */ block (the first is at line "
                                  f"{scan.source_line(found[0][0])}); keep one",
                                  line=scan.source_line(found[1][0]))
        body_start, body_end = found[0]
        body = scan.source[body_start:body_end]
        if len(body) > MAX_LAUNCH_BLOCK_CHARS:
            raise SubmissionError(f"the /* mutagym */ block has {len(body)} characters; at most "
                                  f"{MAX_LAUNCH_BLOCK_CHARS} are read", line=scan.source_line(body_start))
        self.lines = body.split("\n")
        self.first_line = scan.source_line(body_start)
        self._headers: dict[str, list[int]] = {}  # table name -> indexes of its [[name]] lines
        for i, text in enumerate(self.lines):
            if header := _ARRAY_HEADER.match(text):
                self._headers.setdefault(header["name"], []).append(i)
        try:
            self.doc = tomllib.loads(body)
        except tomllib.TOMLDecodeError as err:
            m = _TOML_LOCATION.match(str(err))
            if m is None or m["line"] is None:
                raise SubmissionError(f"the /* mutagym */ block is not valid TOML: "
                                      f"{m['msg'] if m else err} (at the end of the block)",
                                      line=self.first_line + len(self.lines) - 1) from None
            column = int(m["col"])
            if m["line"] == "1":  # the first TOML line starts after "/* mutagym"
                column += body_start - (scan.source.rfind("\n", 0, body_start) + 1)
            raise SubmissionError(f"the /* mutagym */ block is not valid TOML: {m['msg']} "
                                  f"(column {column})",
                                  line=self.first_line + int(m["line"]) - 1) from None
        self.check_keys(self.doc, _TOP_KEYS, ("launch",), where="mutagym block",
                        line=self.first_line, key_line=functools.partial(self.key_line, None, 0))

    def tables(self, name: str) -> list[dict]:
        """The `[[name]]` array of tables (empty when absent)."""
        value = self.doc.get(name, [])
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            raise SubmissionError(f"{name!r} must be an array of tables ([[{name}]]), got "
                                  f"{value!r}", where="mutagym block",
                                  line=self.key_line(None, 0, name))
        if name == "launch" and not value:
            raise SubmissionError("'launch' is empty; declare at least one [[launch]] table",
                                  where="mutagym block", line=self.key_line(None, 0, name))
        return value

    def table_line(self, name: str, index: int) -> int:
        """Line of the *index*-th `[[name]]` header (the block's first line if not found)."""
        rows = self._headers.get(name, [])
        return self.first_line + (rows[index] if index < len(rows) else 0)

    def key_line(self, table: str | None, index: int, key: str) -> int:
        """Line where *key* is set in the *index*-th `[[table]]` (top level when *table* is
        None); the table's own line when it cannot be found (e.g. an inline table)."""
        start = self.table_line(table, index) - self.first_line if table else 0
        name = re.escape(key)
        setting = re.compile(rf"""^\s*(?:["']?{name}["']?\s*=|\[\[?\s*{name}\b)""")
        for i in range(start, len(self.lines)):
            if table and i > start and _TABLE_HEADER.match(self.lines[i]):
                break
            if setting.match(self.lines[i]):
                return self.first_line + i
        return self.first_line + start

    @staticmethod
    def check_keys(table: dict, allowed: Sequence[str], required: Sequence[str], *, where: str,
                   line: int, key_line: Callable[[str], int]) -> None:
        """Refuse keys outside *allowed* (at their line) and missing *required* keys."""
        for key in table:
            if key not in allowed:
                raise SubmissionError(f"unknown key {key!r}{did_you_mean(key, allowed)}; allowed "
                                      f"keys: {', '.join(repr(k) for k in allowed)}",
                                      where=where, line=key_line(key))
        for key in required:
            if key not in table:
                raise SubmissionError(f"missing key {key!r} (required: "
                                      f"{', '.join(repr(k) for k in required)})",
                                      where=where, line=line)


def _read_launch(index: int, table: dict, block: _LaunchBlock) -> Launch:
    """Validate the *index*-th `[[launch]]` table on its own; `_KernelTable.bind` checks its
    kernel and arguments against the source."""
    where, line = f"launch {index}", block.table_line("launch", index)
    key_line = functools.partial(block.key_line, "launch", index)
    block.check_keys(table, _LAUNCH_KEYS, ("kernel", "grid", "block", "args"), where=where,
                     line=line, key_line=key_line)

    kernel = table["kernel"]
    if not isinstance(kernel, str):
        raise SubmissionError(f"'kernel' must be a string, got {kernel!r}", where=where,
                              line=key_line("kernel"))
    shapes = {}
    for key in ("grid", "block"):
        value = table[key]
        if not isinstance(value, list) or not 1 <= len(value) <= 3:
            raise SubmissionError(f"{key!r} must be a list of 1 to 3 expressions, got {value!r}",
                                  where=where, line=key_line(key))
        shapes[key] = tuple(parse_expression(v, where=f"{where} {key}[{i}]", line=key_line(key))
                            for i, v in enumerate(value))
    shared = parse_expression(table.get("shared_bytes", 0), where=f"{where} shared_bytes",
                              line=key_line("shared_bytes"))
    args = table["args"]
    if not isinstance(args, list):
        raise SubmissionError(f"'args' must be a list, got {args!r}", where=where,
                              line=key_line("args"))
    arguments = tuple(_read_argument(arg, f"{where} args[{i}]", key_line("args"))
                      for i, arg in enumerate(args))
    fills = _read_fills(table.get("fill", {}), index, where, key_line("fill"))
    launch = Launch(index=index, kernel=kernel, grid=shapes["grid"], block=shapes["block"],
                    shared_bytes=shared, args=tuple(a.text for a in arguments), line=line,
                    arguments=arguments, fills=fills)
    check_launch_limits(launch, _constants(launch.grid), _constants(launch.block),
                        _constants([shared])[0])
    return launch


_NULL_WORDS = ("NULL", "nullptr", "null")


def _read_argument(arg: object, where: str, line: int) -> Argument:
    """One `args` entry: a name, a null pointer, `buffer + elements`, or an integer expression.

    >>> [(a.kind, a.name) for a in (_read_argument(t, "args[0]", 1)
    ...                              for t in ("x", "NULL", "x + 4", "n // 4"))]
    [('name', 'x'), ('null', None), ('offset', 'x'), ('value', None)]
    """
    if not isinstance(arg, (str, int)) or isinstance(arg, bool):
        raise SubmissionError(f"{arg!r} is not an argument; args name inputs, outputs, scratch "
                              "buffers, dims and scalars, or are NULL, 'buffer + elements' or an "
                              "integer expression", where=where, line=line)
    text = str(arg).strip()
    if text in _NULL_WORDS:
        return Argument(text, "null")
    try:
        expr = parse_expression(text, where=where, line=line)
    except SubmissionError as integer_error:
        try:
            real = parse_expression(text, where=where, line=line, real=True)
        except SubmissionError:
            raise integer_error from None
        return Argument(text, "value", real=real)
    if isinstance(expr.root, str):
        return Argument(text, "name", name=expr.root)
    first = expr.root
    while isinstance(first, tuple) and first[0] in ("+", "-"):   # down the left of a sum
        first = first[1]
    if isinstance(first, str) and text.startswith(first):
        rest = text[len(first):].strip()
        offset = parse_expression(rest[1:] if rest.startswith("+") else "0 " + rest, where=where,
                                  line=line)
        return Argument(text, "offset", name=first, offset=offset, expr=expr,
                        real=parse_expression(text, where=where, line=line, real=True))
    return Argument(text, "value", expr=expr, real=parse_expression(text, where=where, line=line,
                                                                     real=True))


def _read_fills(value: object, index: int, where: str, line: int) -> tuple[Fill, ...]:
    """`fill = {buffer = value, ...}`: a TOML number or an integer expression per buffer."""
    if not isinstance(value, dict):
        raise SubmissionError(f"'fill' must be a table of buffer = value (fill = {{counter = 0}}), "
                              f"got {value!r}", where=where, line=line)
    fills = []
    for name, v in value.items():
        if not name.isidentifier():
            raise SubmissionError(f"fill names {name!r}, which is not a buffer name", where=where,
                                  line=line)
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise SubmissionError(f"fill {name} = {v!r} must be a number or an integer expression",
                                  where=where, line=line)
        expr = parse_expression(v, where=f"{where} fill {name}", line=line) if isinstance(v, str) else None
        fills.append(Fill(name, None if expr else v, expr, index, line))
    return tuple(fills)


def _read_inout(block: _LaunchBlock) -> tuple[InOut, ...]:
    """`inout = ["x"]` (the output of x's shape and dtype) or `inout = {out = "x"}`."""
    value, line = block.doc.get("inout", []), block.key_line(None, 0, "inout")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        pairs = [(v, None) for v in value]
    elif isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        pairs = [(v, k) for k, v in value.items()]
    else:
        raise SubmissionError(f"'inout' must list inputs (inout = [\"x\"]) or map outputs to "
                              f"inputs (inout = {{out = \"x\"}}), got {value!r}",
                              where="mutagym block", line=line)
    for name in (n for pair in pairs for n in pair if n is not None):
        if not name.isidentifier():
            raise SubmissionError(f"'inout' names {name!r}, which is not a buffer name",
                                  where="mutagym block", line=line)
    inputs = [i for i, _ in pairs]
    if len(set(inputs)) != len(inputs):
        raise SubmissionError(f"'inout' names an input twice: {inputs}", where="mutagym block",
                              line=line)
    return tuple(InOut(i, o, line) for i, o in pairs)


_CONSTANT_DECLARATION = r"\b__constant__\b[^;{{}}=]*?\b{name}\s*\["


def _read_constants(block: _LaunchBlock, scan: _Scan) -> tuple[ConstantBinding, ...]:
    """`constant = {c_filter = "weight"}`: each key an array the source declares `__constant__`."""
    value, line = block.doc.get("constant", {}), block.key_line(None, 0, "constant")
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SubmissionError(f"'constant' must map __constant__ arrays to inputs (constant = "
                              f"{{c_filter = \"weight\"}}), got {value!r}", where="mutagym block",
                              line=line)
    bindings = []
    for symbol, name in value.items():
        if not symbol.isidentifier() or not re.search(
                _CONSTANT_DECLARATION.format(name=re.escape(symbol)), scan.code):
            raise SubmissionError(f"constant {symbol!r}: the source declares no __constant__ "
                                  f"array of that name (such as __constant__ float {symbol}[64];)",
                                  where="mutagym block", line=line)
        if not name.isidentifier():
            raise SubmissionError(f"constant {symbol!r} = {name!r}: not an input name",
                                  where="mutagym block", line=line)
        bindings.append(ConstantBinding(symbol, name, line))
    return tuple(bindings)


def _check_fills(launches: Sequence[Launch], inout: Sequence[InOut]) -> None:
    """A fill happens before its launch, so it must come before any launch passes the buffer:
    then the buffer can start out filled, on either backend, and no fill runs between launches."""
    filled: dict[str, Fill] = {}
    passed: dict[str, int] = {}
    copied = {pair.input for pair in inout} | {pair.output for pair in inout if pair.output}
    for launch in launches:
        for fill in launch.fills:
            where = f"launch {launch.index} fill {fill.buffer}"
            if fill.buffer in filled:
                raise SubmissionError(f"buffer {fill.buffer!r} is filled twice (launches "
                                      f"{filled[fill.buffer].launch} and {launch.index})",
                                      where=where, line=fill.line)
            if fill.buffer in passed:
                raise SubmissionError(f"buffer {fill.buffer!r} is filled before launch "
                                      f"{launch.index}, but launch {passed[fill.buffer]} already "
                                      "passes it; a fill goes before the buffer's first use",
                                      where=where, line=fill.line)
            if fill.buffer in copied:
                raise SubmissionError(f"buffer {fill.buffer!r} is an inout buffer: it starts as a "
                                      "copy of its input and cannot be filled", where=where,
                                      line=fill.line)
            filled[fill.buffer] = fill
        for arg in launch.arguments:
            if arg.name is not None:
                passed.setdefault(arg.name, launch.index)


def _constants(exprs: Sequence[Expr]) -> list[int | None]:
    """Values of the expressions that name nothing (None for the others)."""
    return [None if e.names else e.evaluate({}) for e in exprs]


def _read_scratch(index: int, table: dict, block: _LaunchBlock) -> Scratch:
    """Validate the *index*-th `[[scratch]]` table."""
    where, line = f"scratch {index}", block.table_line("scratch", index)
    key_line = functools.partial(block.key_line, "scratch", index)
    block.check_keys(table, _SCRATCH_KEYS, ("name", "dtype", "size"), where=where, line=line,
                     key_line=key_line)
    name, dtype, init = table["name"], table["dtype"], table.get("init", "poison")
    if not isinstance(name, str) or not name.isidentifier():
        raise SubmissionError(f"'name' must be an identifier, got {name!r}", where=where,
                              line=key_line("name"))
    if dtype not in SCRATCH_DTYPES:
        raise SubmissionError(f"'dtype' = {dtype!r} is not supported; choose one of "
                              f"{', '.join(SCRATCH_DTYPES)}", where=where, line=key_line("dtype"))
    if init not in ("poison", "zero"):
        raise SubmissionError(f"'init' = {init!r} must be 'poison' or 'zero'", where=where,
                              line=key_line("init"))
    size = parse_expression(table["size"], where=f"{where} size", line=key_line("size"))
    return Scratch(name=name, dtype=dtype, size=size, init=init, line=line)


def check_launch_limits(launch: Launch, grid: Sequence[int | None], block: Sequence[int | None],
                        shared_bytes: int | None) -> None:
    """Raise LaunchError if a value of *launch*'s grid, block or dynamic shared memory (None
    where not known yet) is outside what CUDA launches. Used at parse time on constants and
    again by the plan on every value."""
    where = f"launch {launch.index} ({launch.kernel})"
    for kind, exprs, values, limits in (("grid", launch.grid, grid, MAX_GRID_DIMS),
                                        ("block", launch.block, block, MAX_BLOCK_DIMS)):
        for axis, (expr, value) in enumerate(zip(exprs, values)):
            if value is not None and not 1 <= value <= limits[axis]:
                raise LaunchError(f"{kind}[{axis}] = {expr.text!r} evaluates to {value}; CUDA "
                                  f"allows 1 to {limits[axis]} in {kind} {'xyz'[axis]}",
                                  where=where, line=launch.line)
    if None not in block and math.prod(block) > MAX_THREADS_PER_BLOCK:
        texts = [e.text for e in launch.block]
        raise LaunchError(f"block = {texts!r} evaluates to {tuple(block)} = {math.prod(block)} "
                          f"threads; CUDA allows at most {MAX_THREADS_PER_BLOCK} threads per block",
                          where=where, line=launch.line)
    if shared_bytes is not None and not 0 <= shared_bytes <= MAX_DYNAMIC_SHARED_BYTES:
        raise LaunchError(f"shared_bytes = {launch.shared_bytes.text!r} evaluates to "
                          f"{shared_bytes}; dynamic shared memory must be 0 to "
                          f"{MAX_DYNAMIC_SHARED_BYTES} bytes", where=where, line=launch.line)


# --------------------------------------------------------------------------------------------
# Kernel signatures
# --------------------------------------------------------------------------------------------

_GLOBAL = re.compile(r"\b__global__\b")
_C_LITERAL = re.compile(r'\s*"C"')
_WORD = re.compile(r"\s*(?P<word>[A-Za-z_]\w*)")
_OPEN_PAREN = re.compile(r"\s*\(")
_NEXT_CHAR = re.compile(r"\s*(\S?)")
_DECLARATION_END = re.compile(r"[;{}]")
_OPENER = {")": "(", "}": "{"}
_KERNEL_QUALIFIERS = {"static", "inline", "__inline__", "__forceinline__", "__noinline__"}
_ATTRIBUTES = {"__launch_bounds__", "__attribute__", "__declspec", "__cluster_dims__"}


@dataclass(frozen=True)
class _Definition:
    """One `__global__ void` definition: its parameters as written, whether it is a template."""

    name: str
    line: int
    template: bool
    params: tuple[str, ...]


def _kernel_definitions(scan: _Scan) -> dict[str, _Definition]:
    """Find the `__global__ void` definitions, of C or C++ linkage, templates included.

    Prototypes are skipped: the definition carries the signature. A name defined twice (an
    overload) is refused: a launch names one kernel. Kernels declared through macros are not
    seen.
    """
    code = scan.code
    closing = _closing_brackets(code)
    directives = _Spans((m.start(), m.end()) for m in _DIRECTIVE.finditer(code))
    ends = [m.end() for m in _DECLARATION_END.finditer(code)]
    definitions: dict[str, _Definition] = {}
    for g in _GLOBAL.finditer(code):
        if g.start() in directives:
            continue
        returns_void, name = False, None
        pos = g.end()
        while (t := _WORD.match(code, pos)) is not None:
            word, pos = t["word"], t.end()
            if word in _ATTRIBUTES and (paren := _OPEN_PAREN.match(code, pos)):
                pos = closing[paren.end() - 1] + 1
            elif word == "extern" and (literal := _C_LITERAL.match(scan.nocomment, pos)):
                pos = literal.end()
            elif word == "void":
                returns_void = True
            elif word not in _KERNEL_QUALIFIERS:
                name = word if _OPEN_PAREN.match(code, pos) else None
                break
        if name is None or not returns_void:
            continue
        line = scan.line(t.start("word"))
        open_paren = _OPEN_PAREN.match(code, pos).end() - 1
        close_paren = closing[open_paren]
        if _NEXT_CHAR.match(code, close_paren + 1)[1] == ";":
            continue
        if name in definitions:
            raise SubmissionError(f"kernel {name!r} is defined twice (lines "
                                  f"{definitions[name].line} and {line})", line=line,
                                  where=f"kernel {name!r}")
        k = bisect.bisect_right(ends, g.start())
        template = _TEMPLATE.search(code, ends[k - 1] if k else 0, g.start()) is not None
        params_text = code[open_paren + 1:close_paren]
        params = () if params_text.strip() in ("", "void") else tuple(split_top_level(params_text))
        definitions[name] = _Definition(name, line, template, params)
    return definitions


_TEMPLATE = re.compile(r"\btemplate\s*<")
_TYPE_NAMES = re.compile(r"\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?;"
                         r"|\busing\s+([A-Za-z_]\w*)\s*=")
_KERNEL_TEXT = re.compile(r"\s*(?P<name>[A-Za-z_]\w*)\s*(?:<(?P<args>.*)>)?\s*", re.S)
_TEMPLATE_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_]\w*)|(?P<num>\d+[uUlL]*)|(?P<op>::|[-,*&<>])"
                             r"|(?P<bad>\S))")


class _KernelTable:
    """The kernels of a submission and the names its own text declares (macros, typedefs and
    `using` aliases, which only the compiler resolves): binds each launch to a signature, from
    the text where it can, else from the compiler (`signature_probe`)."""

    def __init__(self, scan: _Scan):
        self.definitions = _kernel_definitions(scan)
        self.macros = {m["rest"].split("(")[0].split()[0] for m in _DIRECTIVE.finditer(scan.code)
                       if m["name"] == "define" and m["rest"].split()}
        self.type_names = self.macros | {a or b for a, b in _TYPE_NAMES.findall(scan.code)}
        self.signatures: dict[str, KernelSignature] = {}
        self._pending: dict[str, tuple[_Definition, list[Launch]]] = {}
        for d in self.definitions.values():
            if not d.template:
                try:
                    params = tuple(_parse_param(p, i, d.name, d.line, self.type_names)
                                   for i, p in enumerate(d.params))
                except (SubmissionError, _AskCompiler):
                    continue   # reported if a launch names it (`bind`)
                self.signatures[d.name] = KernelSignature(d.name, params, d.line)

    def bind(self, launch: Launch, key_line: Callable[[str], int]) -> Launch:
        """Check *launch*'s kernel; normalize a template instantiation's spelling. Kernels that
        need the compiler are checked by `resolve`."""
        where = f"launch {launch.index}"
        m = _KERNEL_TEXT.fullmatch(launch.kernel)
        name = m["name"] if m else launch.kernel
        definition = self.definitions.get(name)
        if definition is None:
            defined = ", ".join(repr(k) for k in self.definitions) or "none found"
            raise SubmissionError(f"kernel {launch.kernel!r} is not defined"
                                  f"{did_you_mean(name, self.definitions)}; __global__ kernels in "
                                  f"the source: {defined}", where=where, line=key_line("kernel"))
        if m["args"] is None and definition.template:
            raise SubmissionError(f"kernel {name!r} (line {definition.line}) is a template; name an "
                                  f"instantiation, such as kernel = \"{name}<...>\"", where=where,
                                  line=key_line("kernel"))
        if m["args"] is not None and not definition.template:
            raise SubmissionError(f"kernel {name!r} (line {definition.line}) is not a template; "
                                  f'write kernel = "{name}"', where=where, line=key_line("kernel"))
        if m["args"] is not None:
            name = f"{name}<{self._template_args(m['args'], where, key_line('kernel'))}>"
        kernel = name
        launch = dataclasses.replace(launch, kernel=kernel)
        if kernel in self.signatures:
            _check_arg_count(launch, self.signatures[kernel], key_line("args"))
            return launch
        if not definition.template:
            # An error the text shows needs no compiler: a reference, a pointer to a pointer.
            for i, p in enumerate(definition.params):
                try:
                    _parse_param(p, i, kernel, definition.line, self.type_names)
                except _AskCompiler:
                    pass
        self._pending.setdefault(kernel, (definition, []))[1].append(launch)
        return launch

    def _template_args(self, text: str, where: str, line: int) -> str:
        """The template arguments, normalized; only names, integers, `::`, `*`, `&`, `-` and
        nested `<>`: they are pasted into generated code, so nothing there may run or expand."""
        pieces, depth = [], 0
        for t in _TEMPLATE_TOKEN.finditer(text):
            if t["bad"] or (t["word"] and (t["word"] in self.macros or t["word"].startswith("__mg_"))):
                what = t["bad"] or t["word"]
                why = ("a macro of the source: write its value" if t["word"] in self.macros
                       else "not allowed here")
                raise SubmissionError(f"template argument list <{text}> holds {what!r} ({why}); "
                                      "template arguments are types, integers and names",
                                      where=where, line=line)
            token = t.group().strip()
            depth += {"<": 1, ">": -1}.get(token, 0)
            if depth < 0:
                break   # reported below, with the other malformed lists
            if token == ",":
                pieces.append(", ")
            elif pieces and (t["word"] or t["num"]) and pieces[-1][-1:].isalnum():
                pieces.append(" " + token)
            else:
                pieces.append(token)
        normalized = "".join(pieces)
        if depth != 0 or (normalized and not all(split_top_level(normalized))):
            raise SubmissionError(f"template argument list <{text}> has unbalanced '<>' or an "
                                  "empty argument", where=where, line=line)
        return normalized

    def resolve(self, device_text: str) -> None:
        """Ask the compiler for the signatures `bind` left open (in *device_text*, what it will
        build), and check the launches."""
        if not self._pending:
            return
        kernels = list(self._pending)
        for kernel, types in zip(kernels, kernel_types(device_text, kernels)):
            definition, launches = self._pending[kernel]
            where, line = f"launch {launches[0].index}", launches[0].line
            if isinstance(types, ProbeError):
                raise SubmissionError(f"the compiler cannot name kernel {kernel!r}: {types.message}",
                                      where=where if types.line is None else None,
                                      line=line if types.line is None else types.line)
            if len(types) != len(definition.params):
                raise SubmissionError(f"kernel {kernel!r} has {len(types)} parameters as compiled "
                                      f"but {len(definition.params)} as written (a parameter "
                                      "pack?); mutagym binds parameters one by one",
                                      where=where, line=line)
            params = tuple(_parse_param(p, i, kernel, definition.line, frozenset(), resolved=t)
                           for i, (p, t) in enumerate(zip(definition.params, types)))
            self.signatures[kernel] = KernelSignature(kernel, params, definition.line)
            for launch in launches:
                _check_arg_count(launch, self.signatures[kernel], launch.line)


def _check_arg_count(launch: Launch, signature: KernelSignature, line: int) -> None:
    if len(launch.args) != len(signature.params):
        raise SubmissionError(f"kernel {launch.kernel!r} takes {len(signature.params)} parameters "
                              f"but args lists {len(launch.args)}: {signature}",
                              where=f"launch {launch.index}", line=line)


class _Spans:
    """A set of offsets given as (start, end) ranges; `pos in spans` in logarithmic time."""

    def __init__(self, spans: Iterable[tuple[int, int]]):
        self._starts: list[int] = []
        self._ends: list[int] = []
        for start, end in sorted(spans):
            if self._ends and start <= self._ends[-1]:
                self._ends[-1] = max(self._ends[-1], end)
            else:
                self._starts.append(start)
                self._ends.append(end)

    def __contains__(self, pos: int) -> bool:
        k = bisect.bisect_right(self._starts, pos)
        return k > 0 and pos < self._ends[k - 1]


def _closing_brackets(code: str) -> dict[int, int]:
    """Map the offset of every `(` and `{` to the offset of its closing bracket (the end of the
    text when it has none), in one pass so that adversarial nesting stays linear."""
    closing: dict[int, int] = {}
    stacks: dict[str, list[int]] = {"(": [], "{": []}
    for m in re.finditer(r"[(){}]", code):
        c = m.group()
        if c in stacks:
            stacks[c].append(m.start())
        elif stacks[_OPENER[c]]:
            closing[stacks[_OPENER[c]].pop()] = m.start()
    for stack in stacks.values():
        closing.update(dict.fromkeys(stack, len(code)))
    return closing


class _AskCompiler(Exception):
    """A parameter's type is a name only the compiler can resolve (an alias, a macro, a
    template parameter, or one the source redefines)."""


_BINDABLE = ("use float, double, __half, __nv_bfloat16, bool, (unsigned) char/short/int/long long, "
             "the <stdint.h> types or a CUDA vector type such as float4")


def _parse_param(text: str, index: int, kernel: str, line: int, type_names: frozenset[str] | set[str],
                 resolved: str | None = None) -> Param:
    """Read one parameter declaration (`const float* __restrict__ x`) into a `Param`. Its type
    comes from the text, or from *resolved* (the compiler's spelling of it) when given; raise
    `_AskCompiler` when the text names a type that only the compiler can resolve (not in
    `CTYPES`, or one of *type_names*, the names the source itself declares)."""
    shown = " ".join(text.split())

    def fail(message: str) -> NoReturn:
        raise SubmissionError(f"parameter {index} ({shown!r}) {message}", line=line,
                              where=f"kernel {kernel!r}")

    words, pointer, const = _read_type(text.split("=", 1)[0], fail)
    if len(words) < 2 or words[-1] in _C_TYPE_WORDS:
        fail("has no name; name every kernel parameter")
    if pointer > 1:
        fail("is a pointer to a pointer; pass each buffer as its own parameter")
    name, declared = words[-1], _normalize_ctype(words[:-1]) + "*" * pointer
    if resolved is not None:
        words, pointer, const = _read_type(resolved, lambda message: fail(
            f"has type {declared!r}, which the compiler resolves to {resolved!r}; mutagym cannot "
            f"bind it ({message.removeprefix('cannot be parsed: ')}); {_BINDABLE}"))
        if pointer > 1:
            fail(f"has type {declared!r}, which the compiler resolves to {resolved!r}: a pointer "
                 "to a pointer; pass each buffer as its own parameter")
        ctype = _normalize_ctype(words)
        if ctype not in CTYPES:
            if ctype + "*" * pointer == declared:
                fail(f"has type {declared!r}, which mutagym cannot bind; {_BINDABLE}")
            fail(f"has type {declared!r}, which the compiler resolves to {resolved!r}; mutagym "
                 f"cannot bind it; {_BINDABLE}")
    else:
        ctype = _normalize_ctype(words[:-1])
        own_names = type_names.intersection(words[:-1])
        if own_names or (ctype not in CTYPES and not set(words[:-1]) <= _C_TYPE_WORDS):
            raise _AskCompiler(ctype)
        if ctype not in CTYPES:
            fail(f"has type {declared!r}, which mutagym cannot bind; {_BINDABLE}")
    dtype, width = CTYPES[ctype]
    return Param(name=name, ctype=ctype, dtype=dtype, pointer=pointer == 1,
                 const=const and pointer == 1, vector_width=width)


def _read_type(text: str, fail: Callable[[str], NoReturn]) -> tuple[list[str], int, bool]:
    """The words of a declaration (type words, then the name if any), its pointer depth and
    whether the pointee is const (`float const*` and `const float*` alike)."""
    words: list[str] = []
    pointer, const, in_brackets = 0, False, False
    for tok in re.findall(r"[A-Za-z_]\w*|::|&&|\S", text):
        if in_brackets:  # `float x[]` and `float x[4]` are pointers
            in_brackets = tok != "]"
        elif tok == "[":
            pointer, in_brackets = pointer + 1, True
        elif tok == "*":
            pointer += 1
        elif tok in ("&", "&&"):
            fail("is a reference; kernel parameters are pointers or values")
        elif tok == "::":
            if words[-1:] != ["std"]:
                fail("cannot be parsed; write the type without a namespace")
            words.pop()
        elif tok in _PARAM_QUALIFIERS:
            const = const or (tok == "const" and pointer == 0)
        elif re.fullmatch(r"[A-Za-z_]\w*", tok):
            words.append(tok)
        else:
            fail(f"cannot be parsed: unexpected {tok!r}")
    return words, pointer, const


def _normalize_ctype(words: list[str]) -> str:
    """Spell a C integer type one way (`long int` -> `long`, `unsigned` -> `unsigned int`,
    `signed` -> `int`); anything else comes back joined by spaces (and invalid combinations
    fail the `CTYPES` lookup)."""
    counts = {w: words.count(w) for w in words}
    sizes = {"char", "short", "long"} & counts.keys()
    valid = (counts.keys() <= _INTEGER_WORDS and len(sizes) <= 1 and counts.get("long", 0) <= 2
             and all(n == 1 for w, n in counts.items() if w != "long")
             and not ("signed" in counts and "unsigned" in counts)
             and not ("char" in counts and "int" in counts))
    if not valid:
        return " ".join(words)
    size = "long long" if counts.get("long") == 2 else next(iter(sizes), "int")
    if "unsigned" in counts:
        return f"unsigned {size}"
    return "signed char" if size == "char" and "signed" in counts else size
