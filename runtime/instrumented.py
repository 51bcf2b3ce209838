"""The race-checked object is instrumented everywhere: a check on the machine code, not the text.

The race, state and spin checks (`races`, csrc/race.h) see a kernel's memory only through the calls
g++'s thread-sanitizer pass puts before every load and store. A function compiled without them
(`no_sanitize_thread`, `optimize`, a pragma, or anything the source checks did not foresee) reads
and writes unseen: a lost update on a GPU runs clean here. The source checks refuse the attributes
and pragmas that do this; this check reads the built object and refuses any function that touches
memory without calling the instrumentation, whatever the text said.

The object is disassembled (`objdump -d`, bounded). An access is an instruction with a memory
operand, except where it cannot be device memory or a kernel's data: the stack (`%rsp`, or a
register set from it), read-only data and the GOT (`%rip`-relative into a read-only section, or a
register set to such an address, as a jump table is read), address arithmetic (`lea`), padding
(`nop`) and prefetches; a call to the C library's `memcpy`, `memset`, `memmove` or `memcmp`
(a copy of run-time size, which the pass leaves to the library) is one. The instrumentation's
calls are the `__tsan_*` entry points and the
runner's atomic and fence reports (`__mg_race_atomic`, `__mg_race_fence`: the emulation header's
atomics report instead of being instrumented). Functions of the emulator's own (`__mg_*`, which
no text can name) are not judged: a few of them are uninstrumented on purpose (csrc/mg_pipeline.h,
mg_wmma.h, mg_context.cpp). An object that defines a function named like an instrumentation entry
point is refused as well: its calls could land there instead of in the runner.

The judgement is per function, so a function with one instrumented access and another not would
pass; what it catches is a function the instrumentation skipped whole, which is what an opt-out
does. x86-64 only: elsewhere the source checks stand alone (docs/threat-model.md).
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

from .elf_check import ALWAYS_ALLOWED
from .errors import SubmissionError
from .races import TSAN_CALLBACKS, binutils

__all__ = ["INSTRUMENTATION_CALLS", "check_instrumented"]

#: Calls that tell the race detector about an access.
INSTRUMENTATION_CALLS = TSAN_CALLBACKS | {"__mg_race_atomic", "__mg_race_fence"}
#: The disassembly of an object of the largest size allowed (elf_check.MAX_OBJECT_BYTES) is read
#: whole up to here; an object whose code disassembles to more is refused (part of it unread).
_CAPTURE_BYTES = 256 << 20

_FUNCTION = re.compile(r"^[0-9a-f]+ <(?P<name>.+)>:$")
_INSTRUCTION = re.compile(r"^\s*(?P<address>[0-9a-f]+):\t(?P<text>[^#]*?)\s*(?:#\s*(?P<target>[0-9a-f]+)\b.*)?$")
_SECTION = re.compile(r"^\s*\d+\s+(?P<name>\S+)\s+(?P<size>[0-9a-f]+)\s+(?P<vma>[0-9a-f]+)\s+\S+\s+\S+\s+\S+\s+(?P<flags>.*)$")
_GOT_SLOT = re.compile(r"^(?P<offset>[0-9a-f]+)\s+R_X86_64_\w+\s+(?P<symbol>[\w.]+)")
_MEMORY = re.compile(r"(?:%[cdefgs]s:)?[-\w]*\((?P<base>%\w+)?(?:,%\w+)?(?:,\d)?\)|%[fg]s:")
_PREFIXES = {"cs", "ds", "es", "ss", "fs", "gs", "data16", "addr32", "rex", "rex.w", "lock", "rep", "repz",
             "repe", "repnz", "repne", "notrack", "bnd"}
_NO_ACCESS = re.compile(r"lea|nop|prefetch|endbr|ud2|int3|hlt")
_CALL = re.compile(r"call|jmp")
#: Registers a call may change (the System V ABI's caller-saved ones).
_CLOBBERED = {"ax", "cx", "dx", "si", "di", "r8", "r9", "r10", "r11"}


@dataclass
class _Function:
    name: str
    accesses: list[str] = field(default_factory=list)
    instrumented: bool = False


def check_instrumented(object_path: Path) -> None:
    """Raise SubmissionError unless every function of the race-checked object at *object_path*
    that touches memory calls the race detector (see the module); nothing on other machines."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    text = binutils("objdump", ["-d", "-w", "-C", "--no-show-raw-insn"], object_path,
                    required=True, capture_bytes=_CAPTURE_BYTES)
    if len(text) >= _CAPTURE_BYTES:
        raise SubmissionError("the kernel's machine code is too large to check for the race "
                              "detector's instrumentation", where="submission")
    sections = _sections(binutils("objdump", ["-h", "-w"], object_path, required=True))
    slots = {int(m["offset"], 16): m["symbol"] for m in map(_GOT_SLOT.match, binutils(
        "objdump", ["-R", "-w"], object_path, required=True).splitlines()) if m}
    for function in _functions(text, sections, slots):
        name = _qualified_name(function.name)
        if name in INSTRUMENTATION_CALLS:
            raise SubmissionError(f"the kernel defines {function.name!r}, a name of the race detector's "
                                  "instrumentation", where="submission")
        if function.accesses and not function.instrumented and not name.startswith("__mg_"):
            raise SubmissionError(
                f"function {function.name!r} reads or writes memory without the race detector's "
                f"instrumentation (its first access: {function.accesses[0]!r}); the race-checked build "
                "instruments every function, so attributes, pragmas or options that turn it off are "
                "refused", where="submission")


def _qualified_name(demangled: str) -> str:
    """The qualified name of a function as `objdump -C` spells it, without its return type and
    parameters: `void __mg_wmma::multiply<16, 16, 16, float>(...)` is `__mg_wmma::multiply<...>`."""
    demangled = re.sub(r"(?: \[clone [^\]]*\])+$", "", demangled)
    depth, start = 0, 0
    for i, c in enumerate(demangled):
        if depth == 0 and c == "(":
            return demangled[start:i]
        if depth == 0 and c == " ":
            start = i + 1
        depth += (c in "<{[(") - (c in ">}])")
    return demangled[start:]


def _sections(table: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, name, read-only) of each allocated section of `objdump -h`."""
    found = []
    for m in map(_SECTION.match, table.splitlines()):
        if m and "ALLOC" in m["flags"]:
            start = int(m["vma"], 16)
            found.append((start, start + int(m["size"], 16), m["name"], "READONLY" in m["flags"]))
    return found


def _constant(address: int, sections: list[tuple[int, int, str, bool]]) -> bool:
    """Whether *address* lies in read-only data or the GOT (never a kernel's device data)."""
    return any(start <= address < end and (read_only or name in (".got", ".got.plt"))
               for start, end, name, read_only in sections)


def _harmless(base: str | None, target: int | None, safe: set[str], sections) -> bool:
    """Whether a memory operand with *base* (None: none, or a segment's) addresses the stack or
    constant data: `%rsp` or a register set from it or from a constant's address, or `%rip` with
    a *target* in read-only data or the GOT."""
    if base == "%rip":
        return target is not None and _constant(target, sections)
    return base is not None and _family(base) in safe | {"sp"}


def _family(register: str) -> str:
    """A register's 64-bit name without `%r`/`%e` (`%edi` and `%dil` are `di`, `%r8d` is `r8`)."""
    name = register.lstrip("%")
    m = re.fullmatch(r"(r\d+)[dwb]?", name)
    if m:
        return m[1]
    name = re.sub(r"^[re]", "", name) if len(name) == 3 and name[0] in "re" else name
    return {"al": "ax", "ah": "ax", "bl": "bx", "bh": "bx", "cl": "cx", "ch": "cx", "dl": "dx", "dh": "dx",
            "sil": "si", "dil": "di", "bpl": "bp", "spl": "sp"}.get(name, name)


def _functions(text: str, sections, slots: dict[int, str]) -> list[_Function]:
    """Each function of the disassembly *text*, with its memory accesses (as written) that could
    touch device memory and whether it calls the instrumentation."""
    functions: list[_Function] = []
    safe: set[str] = set()   # registers holding a stack address or a constant's
    for line in text.splitlines():
        head = _FUNCTION.match(line)
        if head:
            functions.append(_Function(head["name"]))
            safe = set()
            continue
        m = _INSTRUCTION.match(line)
        if not m or not functions or not m["text"]:
            continue
        words = m["text"].split(None, 1)
        while words and words[0] in _PREFIXES:
            words = words[1].split(None, 1) if len(words) > 1 else []
        if not words:
            continue
        mnemonic, operands = words[0], words[1] if len(words) > 1 else ""
        target = int(m["target"], 16) if m["target"] else None
        function = functions[-1]
        if _CALL.match(mnemonic):
            if target is not None and slots.get(target) in INSTRUMENTATION_CALLS:
                function.instrumented = True
            elif target is not None and slots.get(target) in ALWAYS_ALLOWED:   # the C library's
                function.accesses.append(f"{mnemonic} {slots[target]}")
            elif "<" in operands and operands.split("<", 1)[1].split("(")[0].split("@")[0] in INSTRUMENTATION_CALLS:
                function.instrumented = True
            if mnemonic.startswith("call"):
                safe -= _CLOBBERED
            continue
        destination = operands.rsplit(",", 1)[-1].strip()
        written = _family(destination) if destination.startswith("%") else None
        accesses = list(_MEMORY.finditer(operands))
        if _NO_ACCESS.match(mnemonic):
            if mnemonic.startswith("lea") and written:
                harmless = bool(accesses) and _harmless(accesses[0]["base"], target, safe, sections)
                safe = safe | {written} if harmless else safe - {written}
            continue
        if any(not _harmless(access["base"], target, safe, sections) for access in accesses):
            function.accesses.append(f"{mnemonic} {operands}".strip())
        if written:
            if mnemonic.startswith("mov") and operands.split(",")[0].strip() == "%rsp":
                safe = safe | {written}
            else:
                safe = safe - {written}
    return functions
