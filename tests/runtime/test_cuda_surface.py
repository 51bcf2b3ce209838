"""Nothing CUDA lacks: every function and overload of the emulation headers also exists in CUDA.

A kernel written against the CPU emulator must not use anything NVRTC refuses (issue 15, item 6:
`atomicMax(float*, float)` built here and failed NVRTC). This test enumerates the device-callable
API that the emulation headers (`runtime/csrc/mutagym_cuda.h` and the `mg_*.h` it includes)
declare, writes one call site per overload whose arguments have exactly that overload's parameter
types, and compiles all of them with the real NVRTC at the gate's architecture (`nvrtc_compile`'s
default, the one every submission is judged with). Each call site also asserts that the call's
type is the overload's return type, so an overload CUDA lacks but reaches through a conversion
(`__shfl_sync` on a `short`, which CUDA promotes to `int`) is caught as well.

How the API is enumerated, and why it is robust:

1. g++ preprocesses `#include "mutagym_cuda.h"` (`g++ -E`, with line markers): every macro that
   stamps out overloads (`__MG_ATOMIC_RMW`, `__MG_DEFINE_16BIT_OPS`, `__MG_UNARY`, ...) is
   expanded by the compiler itself, and the line markers say which header each line came from.
   Only text from the eight emulation headers is kept (glibc's own <math.h> is not ours).
2. A small scanner walks that text by brace depth: a `{...}` body at namespace level is a
   function definition (its head is `[template <...>] specifiers return-type name(params)`) or a
   struct (whose constructors and conversion operators are enumerated too); `extern "C" {}` and
   `namespace std {}` blocks are entered. `__attribute__((...))`, `alignas`, `constexpr`,
   `noexcept` and member initialisers are stripped from the head. Names starting with `__mg` and
   the struct `__mg_*` helpers are internal and skipped.
3. The scanner is checked against the compiler: `g++ -fdump-tree-original` lists every function
   the translation unit defines, with its signature as g++ resolved it. Minus the functions that
   the system headers alone define, that list must give, name by name, as many non-template
   overloads as the scanner found (`test_enumeration_agrees_with_gcc`), so a declaration the
   regexes miss fails the test instead of escaping it.
4. Templates are instantiated with every scalar, vector, half and bfloat16 type; the
   instantiations g++ itself refuses (the emulator's own `static_assert`s) are not part of the
   emulator's surface and are dropped. Every other call site must compile under g++ with the
   emulation header (`test_call_sites_compile_on_the_emulator`): a call site g++ refuses is a
   bug of this generator, not a finding.

When NVRTC refuses a call site, the overload must go from the emulation headers (or, if CUDA has it
only on newer architectures, be guarded by `__CUDA_ARCH__` so that it exists exactly where NVRTC's
target has it). `test_every_overload_exists_in_cuda` names each refusal with its header and line.
"""

from __future__ import annotations

import bisect
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from mutagym.runtime.errors import CompileError, InfrastructureError
from mutagym.runtime.toolchain import CSRC, EMULATION_HEADER, compiler, kernel_flags

#: The headers whose declarations are the emulator's device API.
HEADERS = ("mg_math.h", "mg_rounding.h", "mg_intrinsics.h", "mg_half.h", "mg_bf16.h", "mg_types.h",
           "mg_cmath.h", "mg_atomic.h", "mutagym_cuda.h")

#: What a template parameter is instantiated with: every type a kernel may pass.
SCALARS = ("bool", "char", "signed char", "unsigned char", "short", "unsigned short", "int",
           "unsigned int", "long", "unsigned long", "long long", "unsigned long long", "float",
           "double")
VECTORS = tuple(f"{base}{n}" for base in ("char", "uchar", "short", "ushort", "int", "uint", "long",
                                          "ulong", "longlong", "ulonglong", "float", "double")
                for n in (1, 2, 3, 4))
HALVES = ("__half", "__half2", "__nv_bfloat16", "__nv_bfloat162")
TEMPLATE_TYPES = SCALARS + VECTORS + HALVES
#: A template of two parameters gets every pair of these (vectors convert to nothing numeric).
PAIR_TYPES = SCALARS + HALVES

_BUILTIN_TYPE_WORDS = {"void", "bool", "char", "short", "int", "long", "float", "double", "signed",
                       "unsigned", "const", "volatile", "__int128", "_Float128"}
_SPECIFIERS = {"static", "inline", "extern", "constexpr", "explicit", "__restrict", "typename"}


@dataclass(frozen=True)
class Overload:
    """One function or overload of the emulator's API, as the headers spell it."""

    kind: str                   # "function", "operator", "constructor", "conversion"
    name: str                   # `min`, `operator+=`, `__half` (constructor), `operator float`
    ret: str                    # return type ("" for constructors)
    params: tuple[str, ...]     # parameter types, names and defaults removed
    template: tuple[str, ...]   # template parameter names, () if none
    owner: str                  # struct of a member ("" for a free function)
    header: str
    line: int
    #: False where the header returns an internal proxy (`__mg_hprod`, a `__half` that remembers
    #: its operands for FMA contraction): `ret` is then the public type it derives from, and the
    #: call site checks that the result converts to it rather than that it is exactly that type.
    ret_exact: bool = True

    def __str__(self) -> str:
        where = f"{self.header}:{self.line}"
        qual = f"{self.owner}::" if self.owner else ""
        tmpl = f"template <{', '.join(self.template)}> " if self.template else ""
        return f"{tmpl}{self.ret + ' ' if self.ret else ''}{qual}{self.name}({', '.join(self.params)}) [{where}]"


# ------------------------------------------------------------------------------------ scanning
def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes the one at *start* (strings and chars skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_} at {start}")


def _strip_attributes(head: str) -> str:
    """`__attribute__((...))`, `alignas(...)`, `__asm__(...)` out of a declaration head."""
    while True:
        m = re.search(r"\b(?:__attribute__|alignas|__declspec)\s*\(", head)
        if not m:
            return head
        end = _balanced(head, m.end() - 1, "(", ")")
        head = head[:m.start()] + " " + head[end:]


def _split_top(text: str, sep: str = ",") -> list[str]:
    """*text* split at *sep* outside (), <>, [] and {}."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _norm(t: str) -> str:
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"\s*([*&])\s*", r" \1", t).replace(" *", "*").replace(" &", "&")
    return re.sub(r"(\w)([*&])", r"\1 \2", t).replace(" *", "*").replace(" &", "&")


def _param_type(param: str, known_types: set[str]) -> str:
    """The type of one parameter declaration (`const T &a = x` -> `const T&`)."""
    param = _split_top(param, "=")[0] if "=" in param else param
    param = param.strip()
    m = re.match(r"^(.*?[\w*&>\s])\s*\b([A-Za-z_]\w*)$", param)
    if m and m.group(2) not in known_types and m.group(2) not in _BUILTIN_TYPE_WORDS and m.group(1).strip():
        param = m.group(1)
    return _norm(param)


#: The emulator's two build modes (FMA contraction on and off change the __half operators).
MODES = (True, False)


def _preprocessed(fma: bool) -> list[tuple[str, int, str]]:
    """(header, line, text) of every line of the emulation headers after `g++ -E`, with the
    flags of a kernel build in mode *fma*."""
    out = subprocess.run([compiler(), *kernel_flags(fma), "-E", "-x", "c++", "-I", str(CSRC), "-"],
                         input=f'#include "{EMULATION_HEADER}"\n', capture_output=True, text=True,
                         check=True).stdout
    lines, header, line = [], None, 0
    for raw in out.splitlines():
        m = re.match(r'^# (\d+) "([^"]+)"', raw)
        if m:
            line, path = int(m.group(1)), Path(m.group(2))
            header = path.name if path.parent == CSRC and path.name in HEADERS else None
            continue
        if header is not None:
            lines.append((header, line, raw))
        line += 1
    return lines


@cache
def enumerate_surface(fma: bool = True) -> tuple[Overload, ...]:
    """Every public function, operator, constructor and conversion of the emulation headers, as
    a kernel built in mode *fma* sees them."""
    lines = _preprocessed(fma)
    text = []
    offsets = []   # (offset in the kept text, header, line) of each kept line
    pos = 0
    for header, line, raw in lines:
        offsets.append((pos, header, line))
        text.append(raw + "\n")
        pos += len(raw) + 1
    text = "".join(text)
    starts = [o[0] for o in offsets]

    def locate(i: int) -> tuple[str, int]:
        k = bisect.bisect_right(starts, i) - 1
        return offsets[k][1], offsets[k][2]

    known = set(re.findall(r"\bstruct\s+(?:alignas\s*\(\s*\d+\s*\)\s*)?(\w+)", text))
    known |= set(re.findall(r"\btypedef\b[^;]*?\b(\w+)\s*;", text))
    proxies = dict(re.findall(r"\bstruct\s+(__mg\w+)\s*:\s*(?:public\s+)?(\w+)", text))
    found: dict[tuple, Overload] = {}
    _scan(text, 0, len(text), "", known, found, (locate, proxies))
    return tuple(found.values())


def _scan(text: str, begin: int, end: int, owner: str, known: set[str], found: dict, locate) -> None:
    i = begin
    item_start = begin
    while i < end:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            i = _balanced(text, i, "(", ")")
            continue
        if c == ";":
            _declaration(text[item_start:i], item_start, None, owner, known, found, locate, text)
            i += 1
            item_start = i
            continue
        if c == "{":
            close = _balanced(text, i, "{", "}")
            head = text[item_start:i]
            h = _strip_attributes(head).strip()
            if re.match(r'^extern\s+"C"$', h) or re.match(r"^namespace\s+\w+$", h):
                _scan(text, i + 1, close - 1, owner, known, found, locate)
            elif re.search(r"\bstruct\s+(\w+)\s*$", h) or re.search(r"\bstruct\s+(\w+)\s*:", h):
                name = re.search(r"\bstruct\s+(\w+)", h).group(1)
                if not name.startswith("__mg"):
                    _scan(text, i + 1, close - 1, name, known, found, locate)
            elif re.search(r"\benum\b", h) or ("=" in h.split("(")[0] and "operator" not in h):
                pass   # an enum, or a variable's braced initialiser
            else:
                _declaration(head, item_start, text[i:close], owner, known, found, locate, text)
            i = close
            # a struct's closing brace is followed by `;` (and a definition's is not)
            while i < end and text[i] in " \t\n":
                i += 1
            if i < end and text[i] == ";":
                i += 1
            item_start = i
            continue
        i += 1


def _declaration(head: str, at: int, body: str | None, owner: str, known: set[str], found: dict,
                 locate, text: str) -> None:
    """Record *head* if it declares (or, with a *body*, defines) a public function."""
    raw = head
    head = _strip_attributes(head)
    head = re.sub(r"\s+", " ", head).strip()
    if not head or head.startswith(("typedef", "using", "#", "template <class... P", "enum", "struct ")):
        return
    if head.startswith("public:") or head.startswith("private:"):
        head = head.split(":", 1)[1].strip()
    template: tuple[str, ...] = ()
    m = re.match(r"^template\s*<(.*?)>\s*(.*)$", head)
    if m:
        template = tuple(p.split()[-1] for p in _split_top(m.group(1)))
        head = m.group(2)
    head = re.sub(r'\bextern "C"\s*', "", head)
    # the parameter list: the first top-level (...) after the name (members may have `: init(...)`)
    m = re.search(r"(operator\s*(?:\(\)|[^\s(\w]+|[\w: ]+?)|~?[A-Za-z_][\w:]*)\s*\(", head)
    if not m:
        return
    name = re.sub(r"\s+", " ", m.group(1)).strip()
    open_ = m.end() - 1
    close = _balanced(head, open_, "(", ")")
    before = head[:m.start()].strip()
    params_text = head[open_ + 1:close - 1].strip()
    after = head[close:].strip()
    if body is None and (after.startswith("=") or "(" not in head):
        return   # `= default`, `= delete`, or a variable
    if body is None and after and not re.match(r"^(const|noexcept|override)?\s*$", after):
        return
    qualified_owner = owner
    if "::" in name:
        qualified_owner, name = name.rsplit("::", 1)
    if name.startswith("__mg") or qualified_owner.startswith("__mg"):
        return
    if re.search(r"\b__mg", params_text):
        return   # takes an internal proxy (the contracted __half product): reached only through one
    if name in {"if", "for", "while", "switch", "return", "sizeof", "static_assert", "decltype"}:
        return
    words = [w for w in re.split(r"\s+", before) if w and w not in _SPECIFIERS]
    ret = _norm(" ".join(words))
    if params_text in ("", "void"):
        params: tuple[str, ...] = ()
    else:
        params = tuple(_param_type(p, known | set(template)) for p in _split_top(params_text))
    if name.startswith("operator") and not ret and qualified_owner:
        kind, ret = "conversion", _norm(name[len("operator"):])
    elif name.startswith("operator"):
        kind = "operator"
    elif qualified_owner and name == qualified_owner:
        kind = "constructor"
    else:
        kind = "function"
    if kind == "function" and not ret:
        return   # a call or a macro use, not a declaration
    locate, proxies = locate
    header, line = locate(at + len(raw) - len(raw.lstrip()))
    base = re.sub(r"&$", "", ret)
    ret_exact = base not in proxies
    if not ret_exact:
        ret = proxies[base]
    overload = Overload(kind, name, ret, params, template, qualified_owner, header, line, ret_exact)
    key = (kind, name, ret, params, template, qualified_owner)
    found.setdefault(key, overload)


# ------------------------------------------------------------------------------------ call sites
@dataclass(frozen=True)
class CallSite:
    overload: Overload
    binding: tuple[tuple[str, str], ...]   # template parameter -> type
    text: str                               # the statements of the call, on one line

    def __str__(self) -> str:
        bound = ", ".join(f"{k} = {v}" for k, v in self.binding)
        return f"{self.overload}" + (f" with {bound}" if bound else "")


_PRELUDE = (
    "template <class A, class B> struct mg_same_ { static constexpr bool value = false; };\n"
    "template <class A> struct mg_same_<A, A> { static constexpr bool value = true; };\n"
)


def _subst(t: str, binding: dict[str, str]) -> str:
    t = re.sub(r"(?:typename )?__mg_\w+<(\w+)>::type", r"\1", t)   # a trait that only restricts T
    for k, v in binding.items():
        t = re.sub(rf"\b{re.escape(k)}\b", v, t)
    return t


def _variable(t: str) -> tuple[str, str]:
    """The declared type of an argument for a parameter of type *t*, and its initialiser."""
    if t.endswith("&"):
        t = t[:-1].strip()
        t = re.sub(r"^const\s+", "", t)
    if t.endswith("*"):
        return t, " = nullptr"
    t = re.sub(r"^const\s+", "", t)
    return t, "{}"


def _call_text(o: Overload, binding: dict[str, str]) -> str:
    """The statements of one call site: an argument of each parameter's type, the call, and the
    check of its type."""
    params = [_subst(p, binding) for p in o.params]
    ret = _subst(o.ret, binding)
    decls, args = [], []
    for k, p in enumerate(params):
        t, init = _variable(p)
        decls.append(f"{t} a{k}{init};")
        args.append(f"a{k}")
    check = ""
    if o.kind == "constructor":
        call = f"{o.owner} r({', '.join(args)}); (void)r;"
    elif o.kind == "conversion":
        call = f"{o.owner} self{{}}; {ret} r = self.operator {ret}(); (void)r;"
    else:
        if o.kind == "operator":
            op = o.name[len("operator"):].strip()
            if len(args) == 2 and op in ("++", "--"):   # postfix: (T&, int)
                expr = f"a0{op}"
            elif len(args) == 1:
                expr = f"{op}a0"
            else:
                expr = f"a0 {op} a1"
        else:
            expr = f"{o.name}({', '.join(args)})"
        if ret != "void" and o.ret_exact:
            check = (f'static_assert(mg_same_<decltype({expr}), {ret}>::value, '
                     f'"returns {ret}");')
        call = f"(void)({expr});" if o.ret_exact else f"{ret} r = {expr}; (void)r;"
    return f"{' '.join(decls)} {call} {check}".strip()


@cache
def call_sites(fma: bool = True) -> tuple[CallSite, ...]:
    """One call site per overload (per instantiation of a template), each one line of CUDA."""
    sites = []
    for o in enumerate_surface(fma):
        bindings: list[dict[str, str]] = [{}]
        types = TEMPLATE_TYPES if len(o.template) < 2 else PAIR_TYPES
        for name in o.template:
            bindings = [dict(b, **{name: t}) for b in bindings for t in types]
        for b in bindings:
            sites.append(CallSite(o, tuple(b.items()), _call_text(o, b)))
    return tuple(sites)


def _source(sites, *, nvrtc: bool) -> str:
    """A translation unit whose line `FIRST_LINE[nvrtc] + k` is call site k."""
    include = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" if nvrtc else "\n\n"
    return include + _PRELUDE + "".join(f"__device__ void mg_probe_{k}() {{ {s.text} }}\n"
                                        for k, s in enumerate(sites))


FIRST_LINE = 2 + _PRELUDE.count("\n") + 1
#: Where a compiler's log names a line of the call sites: an error there, or the instantiation
#: it came from (g++: "required from here"; NVRTC: "detected during ... at line N of ...").
_GPP_LINE = r"(?m)^<stdin>:(\d+):\d+:\s+(?:error|required from here)"
_NVRTC_LINE = r"(?m)(?:^surface\.cu\((\d+)\): error|at line (\d+) of surface\.cu)"
#: NVRTC compiles at most this many call sites at once (its CPU limit is 10 s a compile).
_NVRTC_BATCH = 1500


def _gpp(fma: bool):
    def compile_(source: str) -> tuple[bool, str]:
        proc = subprocess.run([compiler(), *kernel_flags(fma), "-fsyntax-only", "-fmax-errors=0",
                               "-include", str(CSRC / EMULATION_HEADER), "-x", "c++", "-"],
                              input=source, capture_output=True, text=True)
        return proc.returncode == 0, proc.stderr
    return compile_


def _nvrtc(source: str) -> tuple[bool, str]:
    """NVRTC at the gate's architecture (`nvrtc_compile`'s default, as every submission)."""
    from mutagym.runtime.nvrtc import nvrtc_compile
    try:
        nvrtc_compile(source, name="surface.cu")
    except CompileError as err:
        return False, err.log or str(err)
    return True, ""


def _failing(sites: list[CallSite], compile_, line_pattern: str, *, nvrtc: bool) -> list[CallSite]:
    """The call sites *compile_* refuses: the lines its log names, then, for errors it names no
    line of ours for, halving until each refusal is one call site."""
    if not sites:
        return []
    ok, log = compile_(_source(sites, nvrtc=nvrtc))
    if ok:
        return []
    named = set()
    for match in re.finditer(line_pattern, log):
        line = next(int(g) for g in match.groups() if g)
        if 0 <= line - FIRST_LINE < len(sites):
            named.add(line - FIRST_LINE)
    if named:
        bad = [s for k, s in enumerate(sites) if k in named]
        rest = [s for k, s in enumerate(sites) if k not in named]
        return bad + _failing(rest, compile_, line_pattern, nvrtc=nvrtc)
    if len(sites) == 1:
        return sites
    half = len(sites) // 2
    return (_failing(sites[:half], compile_, line_pattern, nvrtc=nvrtc)
            + _failing(sites[half:], compile_, line_pattern, nvrtc=nvrtc))


@cache
def emulator_sites(fma: bool = True) -> tuple[CallSite, ...]:
    """The call sites that compile with the emulation header in mode *fma*: every non-template
    one (else the generator is wrong), and the template instantiations the emulator accepts."""
    sites = list(call_sites(fma))
    refused = set(_failing(sites, _gpp(fma), _GPP_LINE, nvrtc=False))
    return tuple(s for s in sites if s not in refused)


def refused_by_nvrtc() -> list[CallSite]:
    """The call sites of either mode that NVRTC refuses."""
    sites = list({s.text: s for fma in MODES for s in emulator_sites(fma)}.values())
    bad = []
    for start in range(0, len(sites), _NVRTC_BATCH):
        bad += _failing(sites[start:start + _NVRTC_BATCH], _nvrtc, _NVRTC_LINE, nvrtc=True)
    return bad


def _nvrtc_or_skip() -> None:
    from mutagym.runtime.nvrtc import nvrtc_version
    try:
        nvrtc_version()
    except InfrastructureError as err:
        pytest.skip(f"NVRTC is not available: {err}")


# ------------------------------------------------------------------------------------ g++'s view
def _gcc_defined_functions(include: str, fma: bool) -> list[str]:
    """The `;; Function` signatures g++ dumps for a translation unit of *include*."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(include)
        subprocess.run([compiler(), *kernel_flags(fma), "-fsyntax-only", "-I", str(CSRC),
                        f"-fdump-tree-original={tmp}/dump.txt", str(src)], check=True, cwd=tmp)
        dump = (Path(tmp) / "dump.txt").read_text()
    return re.findall(r"(?m)^;; Function (.*?) \((?:null|[\w.]+)\)$", dump)


_GCC_SPELLING = {"long long unsigned int": "unsigned long long", "long long int": "long long",
                 "long unsigned int": "unsigned long", "short unsigned int": "unsigned short",
                 "long int": "long", "short int": "short"}


def _gcc_type_names(text: str) -> str:
    """g++'s spelling of the integer types (`long unsigned int`) as the headers write them."""
    for gcc, ours in _GCC_SPELLING.items():
        text = re.sub(rf"\b{gcc}\b", ours, text)
    return text


def _gcc_public_overloads(fma: bool) -> Counter:
    """(owner, name) -> how many non-template overloads g++ defines from the emulation headers,
    internal ones (`__mg*`, or taking an internal proxy) left out as the scanner leaves them."""
    system = _gcc_defined_functions(
        "#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS 1\n#include <math.h>\n#include <stddef.h>\n"
        "#include <stdint.h>\n#include <float.h>\n", fma)
    ours = Counter(_gcc_defined_functions(f'#include "{EMULATION_HEADER}"\n', fma)) - Counter(system)
    counts = Counter()
    for sig, n in ours.items():
        m = re.search(r"((?:[A-Za-z_]\w*::)*)(operator\s*(?:\(\)|[^\s(\w]+|[\w ]+?)|~?[A-Za-z_]\w*)\((.*)\)",
                      sig)
        owner, name, params = m.group(1).rstrip(":"), re.sub(r"\s+", " ", m.group(2)).strip(), m.group(3)
        if "<" in re.sub(r"operator\s*[^\s(]+", "", sig.split("(")[0]):
            continue   # an instance of a template
        if name.startswith("__mg") or owner.startswith("__mg") or "__mg" in params:
            continue
        if owner.startswith("cooperative_groups"):
            continue   # classes with member templates: checked by the COOPERATIVE_GROUPS list below
        counts[(owner, _gcc_type_names(name))] += n
    return counts


# ------------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("fma", MODES, ids=["fma", "no-fma"])
class TestEnumeration:
    def test_enumeration_agrees_with_gcc(self, fma):
        """Name by name, the scanner finds as many non-template overloads as g++ defines."""
        gcc = _gcc_public_overloads(fma)
        scanned = Counter((o.owner, o.name) for o in enumerate_surface(fma) if not o.template)
        assert gcc == scanned, ("the scanner and g++ disagree:\n"
                                f"g++ only: {sorted((gcc - scanned).items())}\n"
                                f"scanner only: {sorted((scanned - gcc).items())}")

    def test_enumeration_covers_every_header_and_kind(self, fma):
        """Each header contributes, and the kinds the headers use are all found."""
        surface = enumerate_surface(fma)
        assert {o.header for o in surface} == set(HEADERS)
        assert {o.kind for o in surface} == {"function", "operator", "constructor", "conversion"}
        names = {o.name for o in surface}
        assert {"atomicAdd", "__shfl_sync", "__hfma2", "min", "rsqrt", "__ldg", "make_float4",
                "operator+=", "operator*", "__popc", "__syncwarp", "clock"} <= names
        assert not any(o.name.startswith("__mg") for o in surface)

    def test_call_sites_compile_on_the_emulator(self, fma):
        """Every non-template call site compiles with the emulation header: the generator writes
        each overload's own argument types and return type."""
        kept = set(emulator_sites(fma))
        dropped = [s for s in call_sites(fma) if s not in kept and not s.overload.template]
        assert not dropped, "call sites g++ refuses:\n" + "\n".join(f"{s}\n  {s.text}" for s in dropped[:20])


@cache
def _refusals() -> tuple[CallSite, ...]:
    return tuple(refused_by_nvrtc())


class TestAgainstNvrtc:
    def test_every_overload_exists_in_cuda(self):
        """NVRTC, at the gate's architecture, compiles every call site the emulator compiles."""
        _nvrtc_or_skip()
        refused = list(_refusals())
        assert not refused, (f"{len(refused)} overloads of the emulation headers that CUDA lacks:\n"
                             + "\n".join(map(str, refused)))

    @pytest.mark.parametrize("decl, expr, ret", [
        ("short x = 1;", "__shfl_sync(~0u, x, 0)", "int"),
        ("unsigned short x = 1;", "__shfl_up_sync(~0u, x, 1)", "int"),
        ("bool x = 1;", "__shfl_xor_sync(~0u, x, 1)", "int"),
        ("size_t x = 1;", "__shfl_down_sync(~0u, x, 1)", "unsigned long"),
        ("__half2 a{}, b{};", "__shfl_xor_sync(~0u, a * b, 1)", "__half2"),
        ("__half a{}, b{};", "__shfl_sync(~0u, a * b, 0)", "__half"),
        ("char x = 1; int p;", "__match_all_sync(~0u, x, &p)", "unsigned int"),
    ])
    def test_collectives_resolve_as_in_cuda(self, decl, expr, ret):
        """The warp collectives are CUDA's plain overloads: a `short` promotes to the int one, a
        contracted __half2 product (`__mg_hprod2`) converts to __half2; on g++ and on NVRTC."""
        body = f'{decl} (void)({expr}); static_assert(mg_same_<decltype({expr}), {ret}>::value, "r");'
        for fma in MODES:
            ok, log = _gpp(fma)(_PRELUDE + f"__device__ void f() {{ {body} }}\n")
            assert ok, log
        _nvrtc_or_skip()
        ok, log = _nvrtc("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + _PRELUDE
                         + f"__device__ void f() {{ {body} }}\n")
        assert ok, log

    def test_removed_overloads_stay_removed(self):
        """The emulator refuses what CUDA lacks (issue 15's example among them), NVRTC or not."""
        for call in ("float* p = 0; atomicMax(p, 1.0f);", "double* p = 0; atomicMin(p, 1.0);",
                     "float2* p = 0; atomicAdd(p, make_float2(0, 0));", "__half* p = 0; atomicAdd_block(p, __half(0));",
                     "int n = 2; (void)sqrt(n);", "(void)saturatef(0.5f);", "const bool* p = 0; (void)__ldg(p);",
                     "float2 v{}; (void)__shfl_sync(~0u, v, 0);", "uint3 v{}; (void)__match_any_sync(~0u, v);",
                     "__half v{}; (void)__match_any_sync(~0u, v);"):
            for fma in MODES:
                ok, _ = _gpp(fma)(f"__device__ void f() {{ {call} }}\n")
                assert not ok, f"the emulator accepts `{call}`"


# ------------------------------------------------------------------------------------ cooperative groups
# The scanner above reads free functions and structs; cooperative groups are classes with member
# templates, so their surface is this list instead: every function of the emulator's
# csrc/mg_cooperative_groups.h, used as kernels use it, with the type CUDA gives it. Both compilers
# must accept each use with exactly that type, and every function the header defines must be used.

_CG_DECLS = ("cg::thread_block block = cg::this_thread_block(); cg::thread_group group = block; "
             "cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block); "
             "cg::thread_block_tile<8, cg::thread_block> tile8 = cg::tiled_partition<8>(block); "
             "cg::coalesced_group active = cg::coalesced_threads(); cg::grid_group grid = cg::this_grid(); "
             "float f = 1; int i = 1; unsigned u = 1; double d = 1; float2 f2{}; int pred = 0; "
             "auto larger = [](float a, float b) { return a > b ? a : b; };")
COOPERATIVE_GROUPS = (
    ("cg::this_thread_block()", "cg::thread_block"), ("block.size()", "unsigned int"),
    ("block.num_threads()", "unsigned int"), ("block.thread_rank()", "unsigned int"),
    ("block.group_index()", "dim3"), ("block.thread_index()", "dim3"), ("block.group_dim()", "dim3"),
    ("block.dim_threads()", "dim3"), ("block.sync()", "void"), ("cg::sync(block)", "void"),
    ("group.size()", "unsigned long long"), ("group.num_threads()", "unsigned long long"),
    ("group.thread_rank()", "unsigned long long"), ("group.sync()", "void"), ("cg::sync(group)", "void"),
    ("cg::tiled_partition(block, 16)", "cg::thread_group"), ("cg::tiled_partition(group, 8)", "cg::thread_group"),
    ("cg::tiled_partition<32>(block)", "cg::thread_block_tile<32, cg::thread_block>"),
    ("cg::tiled_partition<8>(warp)", "cg::thread_block_tile<8, cg::thread_block_tile<32, void>>"),
    ("cg::tiled_partition<4>(tile8)", "cg::thread_block_tile<4, cg::thread_block_tile<8, cg::thread_block>>"),
    ("warp.thread_rank()", "unsigned int"), ("warp.num_threads()", "unsigned int"),
    ("warp.size()", "unsigned int"), ("warp.meta_group_rank()", "unsigned int"),
    ("warp.meta_group_size()", "unsigned int"), ("warp.sync()", "void"), ("cg::sync(warp)", "void"),
    ("warp.shfl(f, 0)", "float"), ("warp.shfl_down(f, 1u)", "float"), ("warp.shfl_up(i, 1u)", "int"),
    ("warp.shfl_xor(d, 1u)", "double"), ("warp.shfl(f2, 3)", "float2"), ("warp.any(1)", "int"),
    ("warp.all(1)", "int"), ("warp.ballot(1)", "unsigned int"), ("warp.match_any(i)", "unsigned int"),
    ("warp.match_all(u, pred)", "unsigned int"), ("tile8.thread_rank()", "unsigned int"),
    ("tile8.meta_group_rank()", "unsigned int"), ("tile8.meta_group_size()", "unsigned int"),
    ("tile8.shfl_down(f, 4u)", "float"), ("tile8.ballot(0)", "unsigned int"), ("tile8.sync()", "void"),
    ("cg::coalesced_threads()", "cg::coalesced_group"), ("active.size()", "unsigned int"),
    ("active.num_threads()", "unsigned int"), ("active.thread_rank()", "unsigned int"),
    ("active.meta_group_rank()", "unsigned int"), ("active.meta_group_size()", "unsigned int"),
    ("active.sync()", "void"), ("active.shfl(i, 0)", "int"), ("active.shfl_down(f, 1u)", "float"),
    ("active.shfl_up(f, 1)", "float"), ("active.any(1)", "int"), ("active.all(0)", "int"),
    ("active.ballot(1)", "unsigned int"), ("active.match_any(i)", "unsigned int"),
    ("active.match_all(i, pred)", "unsigned int"), ("cg::tiled_partition(active, 4)", "cg::coalesced_group"),
    ("cg::labeled_partition(active, i)", "cg::coalesced_group"),
    ("cg::labeled_partition(warp, u)", "cg::coalesced_group"),
    ("cg::binary_partition(warp, true)", "cg::coalesced_group"), ("cg::this_grid()", "cg::grid_group"),
    ("grid.thread_rank()", "unsigned long long"), ("grid.size()", "unsigned long long"),
    ("grid.num_threads()", "unsigned long long"), ("grid.num_blocks()", "unsigned long long"),
    ("grid.block_rank()", "unsigned long long"), ("grid.block_index()", "dim3"),
    ("grid.dim_blocks()", "dim3"), ("grid.group_dim()", "dim3"), ("grid.dim_threads()", "dim3"),
    ("grid.thread_index()", "dim3"), ("grid.is_valid()", "bool"),
    ("cg::this_thread()", "cg::thread_block_tile<1, void>"), ("cg::thread_rank(warp)", "unsigned int"),
    ("cg::group_size(block)", "unsigned int"), ("cg::reduce(warp, f, cg::plus<float>())", "float"),
    ("cg::reduce(tile8, i, cg::less<int>())", "int"), ("cg::reduce(warp, d, cg::greater<double>())", "double"),
    ("cg::reduce(active, u, cg::bit_and<unsigned>())", "unsigned int"),
    ("cg::reduce(warp, u, cg::bit_or<unsigned>())", "unsigned int"),
    ("cg::reduce(warp, u, cg::bit_xor<unsigned>())", "unsigned int"),
    ("cg::reduce(warp, f, larger)", "float"),
    ("cg::inclusive_scan(warp, i)", "int"), ("cg::inclusive_scan(active, f, cg::plus<float>())", "float"),
    ("cg::exclusive_scan(warp, i)", "int"), ("cg::exclusive_scan(tile8, f, cg::greater<float>())", "float"),
)
_CG_INCLUDES = ("#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n"
                "#include <cooperative_groups/scan.h>\nnamespace cg = cooperative_groups;\n")


def _cg_source(uses, *, nvrtc: bool) -> str:
    lines = [f'static_assert(mg_same_<decltype({e}), {t}>::value, "{e.replace(chr(34), "")}: {t}");'
             for e, t in uses]
    return ((_CG_INCLUDES if nvrtc else "namespace cg = cooperative_groups;\n") + _PRELUDE
            + f"__device__ void uses() {{ {_CG_DECLS} {' '.join(lines)} (void)pred; }}\n")


def test_cooperative_groups_uses_have_cudas_types_on_the_emulator():
    """Every use in COOPERATIVE_GROUPS compiles on the emulator with CUDA's type."""
    for fma in MODES:
        ok, log = _gpp(fma)(_cg_source(COOPERATIVE_GROUPS, nvrtc=False))
        assert ok, log[:3000]


def test_cooperative_groups_uses_have_the_same_types_in_cuda():
    """NVRTC, with CUDA's own cooperative_groups.h, gives every use the same type."""
    _nvrtc_or_skip()
    ok, log = _nvrtc(_cg_source(COOPERATIVE_GROUPS, nvrtc=True))
    assert ok, log[:3000]


def test_every_cooperative_groups_function_is_in_the_list():
    """Each function csrc/mg_cooperative_groups.h defines outside its internal namespace is named
    by a use above, so a function CUDA lacks cannot be added without the check seeing it."""
    text = re.sub(r"namespace __mg_cg \{.*?\}  // namespace __mg_cg", "",
                  (CSRC / "mg_cooperative_groups.h").read_text(), flags=re.S)
    defined = set(re.findall(r"^\s*(?:template <[^>]*>\s*)?(?:static )?(?:inline )?(?:constexpr )?"
                             r"[\w:<>&, ]*?\b([a-z]\w*)\s*\([^;{}\n]*\)\s*(?:const\s*)?(?:->[^{]*)?\{", text, re.M))
    classes = set(re.findall(r"\bclass (\w+)", text))
    used = set(re.findall(r"[.:](\w+)\s*[(<]", " ".join(e for e, _ in COOPERATIVE_GROUPS)))
    missing = defined - classes - {"if", "for", "while"} - used
    assert not missing, f"cooperative-groups functions no use names: {sorted(missing)}"
    assert {"reduce", "tiled_partition", "shfl_down", "is_valid", "labeled_partition"} <= defined


@pytest.mark.parametrize("use, message", [
    ("cg::this_grid().sync();", "grid_group::sync() (grid-wide synchronisation) is not supported"),
    ("auto t = cg::tiled_partition<64>(cg::this_thread_block()); (void)t;", "tiles wider than a warp"),
    ("float v = cg::reduce(cg::this_thread_block(), 1.0f, cg::plus<float>()); (void)v;",
     "not a whole thread_block"),
])
def test_cooperative_groups_the_emulator_refuses_say_why(use, message):
    """What the emulator cannot run is refused when compiled, with a message saying why."""
    ok, log = _gpp(True)(f"namespace cg = cooperative_groups;\n__device__ void f() {{ {use} }}\n")
    assert not ok and message in log, log[:2000]


#: What CUDA device code has of the C library without an include (csrc/mg_libc.h and printf:
#: macros, which the scanner does not see), with CUDA's types.
C_LIBRARY = (("memcpy(p, q, 8)", "void*"), ("memset(p, 0, 8)", "void*"), ("std::memcpy(p, q, 4)", "void*"),
             ("printf(\"%d\\n\", 1)", "int"), ("assert(p != q)", "void"), ("INT_MAX", "int"),
             ("FLT_MAX", "float"), ("DBL_EPSILON", "double"), ("INFINITY", "float"), ("LLONG_MIN", "long long"))


def test_c_library_has_cudas_types_on_both_compilers():
    """memcpy, memset, printf, assert and the limit macros compile with CUDA's types on the
    emulator and under NVRTC, without an include."""
    body = "".join(f'static_assert(mg_same_<decltype({e}), {t}>::value, "{t}"); (void)({e});'
                   for e, t in C_LIBRARY)
    source = _PRELUDE + f"__device__ void f(void* p, const void* q) {{ {body} }}\n"
    ok, log = _gpp(True)(source)
    assert ok, log[:3000]
    _nvrtc_or_skip()
    ok, log = _nvrtc(source)
    assert ok, log[:3000]


#: CUDA's pipeline primitives (csrc/mg_pipeline.h: macros, which the scanner does not see), with
#: CUDA's types; `<cuda_pipeline.h>` is what a kernel includes for them under NVRTC.
PIPELINE = (("__pipeline_memcpy_async(s, q, 16)", "void"), ("__pipeline_memcpy_async(s, q, 8, 4)", "void"),
            ("__pipeline_commit()", "void"), ("__pipeline_wait_prior(1)", "void"))


def test_pipeline_primitives_have_cudas_types_on_both_compilers():
    """The pipeline primitives compile with CUDA's types on the emulator and, with the real
    `<cuda_pipeline.h>`, under NVRTC."""
    body = "".join(f'static_assert(mg_same_<decltype({e}), {t}>::value, "{t}"); {e};' for e, t in PIPELINE)
    source = _PRELUDE + f"__device__ void f(const void* q) {{ __shared__ __align__(16) float s[4]; {body} }}\n"
    ok, log = _gpp(True)(source)
    assert ok, log[:3000]
    _nvrtc_or_skip()
    ok, log = _nvrtc("#include <cuda_pipeline.h>\n" + source)
    assert ok, log[:3000]
