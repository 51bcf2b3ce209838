"""The first sandbox wall: refuse built kernel objects that could run code before the sandbox is up.

The runner `dlopen`s the kernel's shared object before it enters seccomp, so anything the dynamic
linker runs on its own runs unconfined: initialisers (DT_INIT, DT_INIT_ARRAY, DT_PREINIT_ARRAY),
ifunc resolvers (STT_GNU_IFUNC symbols, IRELATIVE relocations), libraries it is told to load
(DT_NEEDED, DT_AUDIT, DT_FILTER, rpaths), and at exit the finalisers. The loader acts on program
headers and dynamic tags, not on section names, so those are what is checked first; section names
are a second check. A kernel may also not carry code outside its compiled functions (a writable
and executable segment, an executable stack, an extra executable section, data inside .text: all
ways to run machine code with no `asm`), may only reference the runner's own `__mg_*` entry points,
the math library and the memory builtins, and its object and static data are capped in size.
Seccomp is the second, independent wall.

The parser reads the whole object once and only the ELF64 little-endian structures it needs, for
x86-64 and aarch64; no external tool is run. Anything truncated or inconsistent is refused as
malformed: the loader would read what this parser cannot, so it must not be trusted either.
"""

from __future__ import annotations

import functools
import os
import struct
from pathlib import Path
from typing import NamedTuple

from .errors import SubmissionError
from .races import TSAN_CALLBACKS

MiB = 1 << 20
#: The built object on disk (it also sits in the compile cache, once per distinct text).
MAX_OBJECT_BYTES = 16 * MiB
#: .data + .bss (memsz of the writable PT_LOAD segments). The emulator's own dynamic shared memory
#: (48 KiB) lives there; the largest of the catalog (matmul_fp16/variant_kahan) has 56 KiB.
MAX_STATIC_DATA_BYTES = 16 * MiB
#: Every PT_LOAD segment's memory together (a read-only NOBITS section grows memory, not the file).
MAX_LOADED_BYTES = 48 * MiB

MATH_LIBRARY = "libm.so.6"
ALWAYS_ALLOWED = frozenset({"memcpy", "memset", "memmove", "memcmp"})
#: How destructors, exit handlers and TLS destructors register: refused even if a library defined them.
EXIT_HOOKS = frozenset({"__cxa_atexit", "__cxa_thread_atexit", "__cxa_thread_atexit_impl", "atexit",
                        "at_quick_exit", "on_exit", "__cxa_finalize", "__tls_get_addr",
                        "___tls_get_addr", "__tls_get_addr_opt", "pthread_atfork", "__register_atfork"})

#: Refused by name as a second check (the loader acts on the dynamic tags, checked first).
FORBIDDEN_SECTIONS = (".init_array", ".preinit_array", ".ctors", ".init", ".fini_array", ".dtors",
                      ".fini", ".tdata", ".tbss", ".tm_clone_table")
#: Executable sections a normal build may have (only .text in practice; the PLT kinds on other linkers).
EXECUTABLE_SECTIONS = frozenset({".text", ".plt", ".plt.got", ".plt.sec"})

EM_X86_64, EM_AARCH64 = 62, 183
#: Relocation types a normal build uses (GLOB_DAT only, over the catalog; RELATIVE and the absolute
#: 64-bit kind for pointer tables in data, JUMP_SLOT for a PLT). All just write an address.
ALLOWED_RELOCATIONS = {
    EM_X86_64: {1: "R_X86_64_64", 6: "R_X86_64_GLOB_DAT", 7: "R_X86_64_JUMP_SLOT", 8: "R_X86_64_RELATIVE"},
    EM_AARCH64: {257: "R_AARCH64_ABS64", 1025: "R_AARCH64_GLOB_DAT", 1026: "R_AARCH64_JUMP_SLOT",
                 1027: "R_AARCH64_RELATIVE"},
}
IRELATIVE = {EM_X86_64: 37, EM_AARCH64: 1032}
_TLS_RELOCATIONS = {EM_X86_64: {16, 17, 18, 19, 20, 21, 22, 23, 36}, EM_AARCH64: set(range(1028, 1032))}
_COPY = {EM_X86_64: 5, EM_AARCH64: 1024}

# program header types and flags
PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_SHLIB, PT_PHDR, PT_TLS = 1, 2, 3, 4, 5, 6, 7
PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, PT_GNU_PROPERTY = 0x6474E550, 0x6474E551, 0x6474E552, 0x6474E553
_BENIGN_SEGMENTS = {0, PT_NOTE, PT_PHDR, PT_GNU_EH_FRAME, PT_GNU_RELRO, PT_GNU_PROPERTY}
PF_X, PF_W = 1, 2

# dynamic tags
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SYMTAB, DT_RELA, DT_RELASZ, DT_RELAENT = 0, 1, 5, 6, 7, 8, 9
DT_STRSZ, DT_SYMENT, DT_HASH, DT_PLTRELSZ, DT_PLTREL, DT_JMPREL = 10, 11, 4, 2, 20, 23
DT_FLAGS, DT_RELRSZ, DT_RELR, DT_RELRENT, DT_GNU_HASH, DT_FLAGS_1 = 30, 35, 36, 37, 0x6FFFFEF5, 0x6FFFFFFB
#: Tags the loader only reads tables or harmless options from. Everything else is refused.
_BENIGN_TAGS = {
    DT_NULL: "DT_NULL", DT_NEEDED: "DT_NEEDED", DT_PLTRELSZ: "DT_PLTRELSZ", 3: "DT_PLTGOT",
    DT_HASH: "DT_HASH", DT_STRTAB: "DT_STRTAB", DT_SYMTAB: "DT_SYMTAB", DT_RELA: "DT_RELA",
    DT_RELASZ: "DT_RELASZ", DT_RELAENT: "DT_RELAENT", DT_STRSZ: "DT_STRSZ", DT_SYMENT: "DT_SYMENT",
    14: "DT_SONAME", 16: "DT_SYMBOLIC", DT_PLTREL: "DT_PLTREL", DT_JMPREL: "DT_JMPREL",
    24: "DT_BIND_NOW", DT_FLAGS: "DT_FLAGS", DT_RELRSZ: "DT_RELRSZ", DT_RELR: "DT_RELR",
    DT_RELRENT: "DT_RELRENT", DT_GNU_HASH: "DT_GNU_HASH", 0x6FFFFFF0: "DT_VERSYM",
    0x6FFFFFF9: "DT_RELACOUNT", DT_FLAGS_1: "DT_FLAGS_1", 0x6FFFFFFC: "DT_VERDEF",
    0x6FFFFFFD: "DT_VERDEFNUM", 0x6FFFFFFE: "DT_VERNEED", 0x6FFFFFFF: "DT_VERNEEDNUM",
}
_MACHINE_TAGS = {
    EM_X86_64: {0x70000000: "DT_X86_64_PLT", 0x70000001: "DT_X86_64_PLTSZ", 0x70000003: "DT_X86_64_PLTENT"},
    EM_AARCH64: {0x70000001: "DT_AARCH64_BTI_PLT", 0x70000003: "DT_AARCH64_PAC_PLT",
                 0x70000005: "DT_AARCH64_VARIANT_PCS"},
}
_LOAD_TIME_CODE = "code that runs when it is loaded"
_EXIT_CODE = "code that runs when it is unloaded or at exit"
_REFUSED_TAGS = {
    12: ("DT_INIT", _LOAD_TIME_CODE), 13: ("DT_FINI", _EXIT_CODE),
    25: ("DT_INIT_ARRAY", _LOAD_TIME_CODE), 27: ("DT_INIT_ARRAYSZ", _LOAD_TIME_CODE),
    26: ("DT_FINI_ARRAY", _EXIT_CODE), 28: ("DT_FINI_ARRAYSZ", _EXIT_CODE),
    32: ("DT_PREINIT_ARRAY", _LOAD_TIME_CODE), 33: ("DT_PREINIT_ARRAYSZ", _LOAD_TIME_CODE),
    22: ("DT_TEXTREL", "the loader would make its code writable"),
    15: ("DT_RPATH", "it changes where the loader finds libraries"),
    29: ("DT_RUNPATH", "it changes where the loader finds libraries"),
    0x6FFFFEFC: ("DT_AUDIT", "the loader would load an auditing library"),
    0x6FFFFEFB: ("DT_DEPAUDIT", "the loader would load an auditing library"),
    0x7FFFFFFF: ("DT_FILTER", "the loader would load another library"),
    0x7FFFFFFD: ("DT_AUXILIARY", "the loader would load another library"),
    0x6FFFFEFA: ("DT_CONFIG", "it changes how the loader finds libraries"),
    0x6FFFFEF6: ("DT_TLSDESC_PLT", "thread-local storage"), 0x6FFFFEF7: ("DT_TLSDESC_GOT", "thread-local storage"),
    17: ("DT_REL", "this machine uses RELA relocations only"), 18: ("DT_RELSZ", "RELA relocations only"),
    19: ("DT_RELENT", "RELA relocations only"), 21: ("DT_DEBUG", "only programs carry it"),
}
DF_ORIGIN, DF_SYMBOLIC, DF_TEXTREL, DF_BIND_NOW, DF_STATIC_TLS = 0x1, 0x2, 0x4, 0x8, 0x10
_ALLOWED_FLAGS = DF_ORIGIN | DF_SYMBOLIC | DF_BIND_NOW
#: NOW, GLOBAL, GROUP, NODELETE, NOOPEN, ORIGIN, DIRECT, NODUMP, NODIRECT: none makes the loader run code.
_ALLOWED_FLAGS_1 = 0x1 | 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x1000 | 0x20000

# sections and symbols
SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL, SHT_DYNSYM = 2, 3, 4, 8, 9, 11
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY, SHT_RELR = 14, 15, 16, 19
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
STT_NOTYPE, STT_FUNC, STT_SECTION, STT_FILE, STT_TLS, STT_GNU_IFUNC = 0, 2, 3, 4, 6, 10
_SHN_LORESERVE = 0xFF00

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_DYN = struct.Struct("<qQ")


class _Malformed(Exception):
    """Raised inside the parser; turned into a SubmissionError that says the object is malformed."""


class Segment(NamedTuple):
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int


class Section(NamedTuple):
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


def _span(data: bytes, offset: int, size: int, what: str) -> None:
    if offset < 0 or size < 0 or offset + size > len(data):
        raise _Malformed(f"{what} lies past the end of the file")


def _string(data: bytes, start: int, end: int, offset: int, what: str) -> str:
    """The NUL-terminated string at `offset` of the string table data[start:end]."""
    if offset < 0 or start + offset >= end:
        raise _Malformed(f"{what} points outside its string table")
    stop = data.find(b"\0", start + offset, end)
    if stop < 0:
        raise _Malformed(f"{what} is not terminated inside its string table")
    return data[start + offset:stop].decode("utf-8", "backslashreplace")


def _shown(name: str) -> str:
    return repr(name if len(name) <= 64 else name[:61] + "...")


def _size(n: int) -> str:
    return f"{n} bytes ({n / MiB:.1f} MiB)"


class _Object:
    """The parts of one ELF64 shared object that the loader and this check read."""

    def __init__(self, data: bytes):
        self.data = data
        if len(data) < _EHDR.size:
            raise _Malformed("the file is shorter than an ELF header")
        ident, etype, machine, version, _entry, phoff, shoff, _flags, ehsize, phentsize, phnum, \
            shentsize, shnum, shstrndx = _EHDR.unpack_from(data, 0)
        if ident[:4] != b"\x7fELF":
            raise _Malformed("it is not an ELF file")
        if ident[4] != 2 or ident[5] != 1:
            raise _Malformed("it is not a little-endian ELF64 object")
        if etype != 3:
            raise _Malformed("it is not a shared object")
        if machine not in ALLOWED_RELOCATIONS:
            raise _Malformed(f"its machine {machine} is neither x86-64 nor aarch64")
        if version != 1 or ehsize != _EHDR.size:
            raise _Malformed("its ELF header is not ELF64 version 1")
        self.machine = machine
        if phnum == 0 or phentsize != _PHDR.size:
            raise _Malformed("it has no program headers of the ELF64 size")
        _span(data, phoff, phnum * _PHDR.size, "the program header table")
        size = len(data)
        self.segments = []
        for ptype, flags, offset, vaddr, _paddr, filesz, memsz, _align in \
                _PHDR.iter_unpack(data[phoff:phoff + phnum * _PHDR.size]):
            if ptype == PT_LOAD and (offset + filesz > size or filesz > memsz):
                raise _Malformed("a PT_LOAD segment lies past the end of the file or has more file "
                                 "bytes than memory")
            self.segments.append(Segment(ptype, flags, offset, vaddr, filesz, memsz))
        self.loads = sorted((s for s in self.segments if s.type == PT_LOAD), key=lambda s: s.vaddr)
        if not self.loads:
            raise _Malformed("it has no PT_LOAD segment")
        for a, b in zip(self.loads, self.loads[1:]):
            if a.vaddr + a.memsz > b.vaddr:
                raise _Malformed("two PT_LOAD segments overlap")
        if [s for s in self.segments if s.type == PT_LOAD] != self.loads:
            raise _Malformed("its PT_LOAD segments are not in address order")

        # Sections: the loader ignores them, but every g++ build has them and the second checks
        # (and static_shared_bytes) read them.
        if shnum == 0 or shentsize != _SHDR.size or shnum >= _SHN_LORESERVE or shstrndx >= shnum:
            raise _Malformed("it has no usable section header table")
        _span(data, shoff, shnum * _SHDR.size, "the section header table")
        raw = list(_SHDR.iter_unpack(data[shoff:shoff + shnum * _SHDR.size]))
        names = raw[shstrndx]
        if names[1] != SHT_STRTAB:
            raise _Malformed("its section name table is not a string table")
        _span(data, names[4], names[5], "the section name table")
        names_start, names_end = names[4], names[4] + names[5]
        self.sections = []
        for name, stype, flags, addr, offset, size, link, _info, _align, entsize in raw:
            if stype != SHT_NOBITS and stype != 0 and offset + size > len(data):
                raise _Malformed("a section lies past the end of the file")
            stop = data.find(b"\0", names_start + name, names_end)
            if stop < 0:
                raise _Malformed("a section name lies outside the section name table")
            self.sections.append(Section(data[names_start + name:stop].decode("utf-8", "backslashreplace"),
                                         stype, flags, addr, offset, size, link, entsize))

    def file_offset(self, vaddr: int, size: int, what: str) -> int:
        """Where the `size` bytes the loader finds at `vaddr` come from in the file."""
        for s in self.loads:
            if s.vaddr <= vaddr and vaddr + size <= s.vaddr + s.filesz:
                return s.offset + (vaddr - s.vaddr)
        raise _Malformed(f"{what} is not in the file-backed part of a loaded segment")

    def file_span(self, vaddr: int, what: str) -> tuple[int, int]:
        """(file offset, bytes that follow it in the same segment's file part) of `vaddr`."""
        for s in self.loads:
            if s.vaddr <= vaddr < s.vaddr + s.filesz:
                return s.offset + (vaddr - s.vaddr), s.vaddr + s.filesz - vaddr
        raise _Malformed(f"{what} is not in the file-backed part of a loaded segment")

    def writable(self, vaddr: int, size: int) -> bool:
        return any(s.flags & PF_W and s.vaddr <= vaddr and vaddr + size <= s.vaddr + s.memsz
                   for s in self.loads)

    def symbols(self, section: Section) -> list[tuple]:
        """(name offset, info, other, shndx, value, size) of every symbol of a symbol table section."""
        if section.entsize != _SYM.size or section.size % _SYM.size:
            raise _Malformed(f"the symbol table {section.name} has entries of an odd size")
        return list(_SYM.iter_unpack(self.data[section.offset:section.offset + section.size]))

    def section_strings(self, symtab: Section) -> tuple[int, int]:
        if not 0 < symtab.link < len(self.sections) or self.sections[symtab.link].type != SHT_STRTAB:
            raise _Malformed(f"the symbol table {symtab.name} has no string table")
        strings = self.sections[symtab.link]
        return strings.offset, strings.offset + strings.size


def _sections(data: bytes) -> dict[str, Section]:
    """Section name -> section (the first of a name)."""
    sections: dict[str, Section] = {}
    for s in _Object(data).sections:
        sections.setdefault(s.name, s)
    return sections


def _defined_dynamic_symbols(data: bytes) -> set[str]:
    """Names of the dynamic symbols an object defines (read through its section headers)."""
    obj = _Object(data)
    names: set[str] = set()
    for s in obj.sections:
        if s.type == SHT_DYNSYM:
            start, end = obj.section_strings(s)
            names.update(_string(data, start, end, sym[0], "a symbol name")
                         for sym in obj.symbols(s)[1:] if sym[3] != 0 and sym[0])
    return names


@functools.lru_cache(maxsize=1)
def math_library_symbols() -> frozenset[str]:
    """Every function the loaded math library defines (found through this process's own maps)."""
    # CPython itself links the math library, so it is mapped in this process already.
    paths = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
             if "/libm.so" in line or "/libm-" in line}
    names: set[str] = set()
    for path in paths:
        names.update(_defined_dynamic_symbols(Path(path).read_bytes()))
    if not names:
        raise RuntimeError("could not locate the math library's symbols in /proc/self/maps")
    return frozenset(names - EXIT_HOOKS)


def _data_symbols(path: str | Path) -> list[tuple[str, str, int, int]]:
    """(name, section, address, size) of every sized symbol of the object's symbol tables."""
    data = Path(path).read_bytes()
    try:
        obj = _Object(data)
        found = []
        for s in obj.sections:
            if s.type != SHT_SYMTAB:
                continue
            start, end = obj.section_strings(s)
            for name, _info, _other, shndx, value, size in obj.symbols(s)[1:]:
                if name and size and 0 < shndx < len(obj.sections):
                    found.append((_string(data, start, end, name, "a symbol name"), obj.sections[shndx],
                                  value, size))
        return found
    except _Malformed as e:
        raise SubmissionError(f"the kernel's object is malformed or truncated: {e}") from None


def guard_variables(path: str | Path) -> list[tuple[int, int]]:
    """(address, size) of the static-initialisation guards g++ gives some `__shared__` arrays (a
    class type's array has one even with a trivial constructor): the emulator's bookkeeping, set
    once per process, which the runner's state check must not count as the kernel's state."""
    return [(address, size) for name, _section, address, size in _data_symbols(path) if name.startswith("_ZGV")]


#: Writable data of every kernel object that the runner keeps per object: the thread indices and
#: the dynamic shared memory (static shared memory is the `mg_shared` section).
_PER_OBJECT_DATA = frozenset(("__mg_ctx", "__mg_dynamic_smem"))


def writable_data(path: str | Path) -> dict[str, tuple[int, int]]:
    """Name -> (address, size) of the kernel's own writable data (`__device__` and `__constant__`
    variables, function statics, g++'s guards), the runner's per-object data left out."""
    return {name: (address, size) for name, section, address, size in _data_symbols(path)
            if section.flags & SHF_WRITE and section.flags & SHF_ALLOC and section.name != "mg_shared"
            and name not in _PER_OBJECT_DATA}


def kernel_data(path: str | Path) -> tuple[tuple[str, int, int], ...] | None:
    """`writable_data` as (name, address, size) by address: what two builds of one text lay out
    alike and the runner copies between them; None when the loader writes addresses into it (an
    initialised pointer), which would point into the other build once copied."""
    found = sorted(((name, address, size) for name, (address, size) in writable_data(path).items()),
                   key=lambda d: (d[1], d[0]))
    obj = _Object(Path(path).read_bytes())
    for s in obj.sections:
        if s.type == SHT_RELR and s.size:
            return None
        if s.type == SHT_RELA and s.flags & SHF_ALLOC:
            for where, _info, _addend in _RELA.iter_unpack(obj.data[s.offset:s.offset + s.size]):
                if any(address <= where < address + size for _, address, size in found):
                    return None
    return tuple(found)


def static_shared_bytes(path: str | Path) -> int:
    """Bytes of static `__shared__` storage in a built kernel (its `mg_shared` section)."""
    try:
        sections = _sections(Path(path).read_bytes())
    except _Malformed as e:
        raise SubmissionError(f"the kernel's object is malformed or truncated: {e}") from None
    return sections["mg_shared"].size if "mg_shared" in sections else 0


def _refuse(what: str) -> SubmissionError:
    return SubmissionError(f"the kernel's object {what}")


def check_kernel_object(path: str | Path) -> None:
    """Raise `SubmissionError` if the built object could act before or outside the sandbox."""
    size = os.stat(path).st_size
    if size > MAX_OBJECT_BYTES:
        raise _refuse(f"is {_size(size)}; at most {_size(MAX_OBJECT_BYTES)} are allowed (large "
                      "initialised arrays are not allowed: compute tables in the kernel)")
    data = Path(path).read_bytes()
    try:
        _check(_Object(data))
    except _Malformed as e:
        raise SubmissionError(f"the kernel's object is malformed or truncated: {e}") from None
    except SubmissionError:
        raise
    except (struct.error, IndexError, ValueError, OverflowError) as e:  # a gap in the checks above
        raise SubmissionError(f"the kernel's object is malformed or truncated ({type(e).__name__})") from None


def _check(obj: _Object) -> None:
    _check_segments(obj)
    _check_sections(obj)
    dynamic = _dynamic_entries(obj)
    dynsym, dynstr, nsyms = _dynamic_symbol_table(obj, dynamic)
    _check_tags(obj, dynamic, dynstr)
    _check_relocations(obj, dynamic, nsyms)
    _check_symbols(obj)
    _check_undefined(obj, dynsym)


def _check_sections(obj: _Object) -> None:
    """Initialiser, finaliser and TLS sections by name and by type; executable sections by name."""
    for s in obj.sections:
        refused = s.name in FORBIDDEN_SECTIONS or s.type in (SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY) \
            or s.flags & SHF_TLS
        if refused:
            if s.flags & SHF_TLS or s.name.startswith(".t"):
                what = "thread-local storage"
            elif s.type == SHT_FINI_ARRAY or s.name in (".fini_array", ".dtors", ".fini"):
                what = _EXIT_CODE
            else:
                what = _LOAD_TIME_CODE
            shown = f"a {s.name} section" if s.name in FORBIDDEN_SECTIONS else f"a section {_shown(s.name)}"
            raise _refuse(f"has {shown} ({what}): global constructors and destructors, "
                          "static objects with non-trivial initialisers or destructors, and thread_local "
                          "are not allowed")
    for s in obj.sections:
        if s.flags & SHF_EXECINSTR and s.name not in EXECUTABLE_SECTIONS:
            raise _refuse(f"has an executable section {_shown(s.name)} (only compiled functions in .text "
                          "may run; code placed in another section is refused)")


def _check_segments(obj: _Object) -> None:
    """What the loader maps: no interpreter, no TLS, no W+X memory, a non-executable stack, caps."""
    stack = [s for s in obj.segments if s.type == PT_GNU_STACK]
    for s in obj.segments:
        if s.type == PT_INTERP:
            raise _refuse("names a program interpreter (PT_INTERP): a kernel is a library, not a program")
        if s.type == PT_TLS:
            raise _refuse("has a thread-local storage segment (PT_TLS): thread_local is not allowed")
        if s.type == PT_LOAD and s.flags & PF_W and s.flags & PF_X:
            raise _refuse("has a segment that is both writable and executable (machine code could be "
                          "written there and run)")
        if s.type not in _BENIGN_SEGMENTS | {PT_LOAD, PT_DYNAMIC, PT_GNU_STACK}:
            raise _refuse(f"has a program header of unexpected type {s.type:#x} (the loader may act on it)")
    if not stack:
        raise _refuse("has no PT_GNU_STACK header (the loader would make the stack executable)")
    if any(s.flags & PF_X for s in stack):
        raise _refuse("asks for an executable stack (PT_GNU_STACK): machine code could run from the stack")
    writable = sum(s.memsz for s in obj.loads if s.flags & PF_W)
    if writable > MAX_STATIC_DATA_BYTES:
        raise _refuse(f"has {_size(writable)} of static data (.data and .bss: global and __device__ "
                      f"arrays); at most {_size(MAX_STATIC_DATA_BYTES)} are allowed")
    loaded = sum(s.memsz for s in obj.loads)
    if loaded > MAX_LOADED_BYTES:
        raise _refuse(f"maps {_size(loaded)} of memory when loaded; at most {_size(MAX_LOADED_BYTES)} "
                      "are allowed")


def _dynamic_entries(obj: _Object) -> dict[int, list[int]]:
    """Tag -> values of the dynamic section, read where the loader reads it, up to the first DT_NULL."""
    dynamic = [s for s in obj.segments if s.type == PT_DYNAMIC]
    if len(dynamic) != 1:
        raise _Malformed(f"it has {len(dynamic)} PT_DYNAMIC headers, not one")
    seg = dynamic[0]
    if seg.filesz % _DYN.size or seg.filesz == 0 or seg.memsz != seg.filesz:
        raise _Malformed("its PT_DYNAMIC header has an odd size")
    offset = obj.file_offset(seg.vaddr, seg.filesz, "the dynamic section")
    if offset != seg.offset:
        raise _Malformed("its PT_DYNAMIC header disagrees with the segment that holds it")
    sections = [s for s in obj.sections if s.type == 6]  # SHT_DYNAMIC
    if len(sections) != 1 or sections[0].addr != seg.vaddr:
        raise _Malformed("its dynamic section header disagrees with PT_DYNAMIC")
    entries: dict[int, list[int]] = {}
    for tag, value in _DYN.iter_unpack(obj.data[offset:offset + seg.filesz]):
        if tag == DT_NULL:
            return entries
        entries.setdefault(tag, []).append(value)
    raise _Malformed("its dynamic section has no terminating DT_NULL")


def _one(dynamic: dict[int, list[int]], tag: int) -> int | None:
    values = dynamic.get(tag)
    if values is None:
        return None
    if len(values) != 1:
        raise _Malformed(f"its dynamic section repeats the tag {_BENIGN_TAGS.get(tag, hex(tag))}")
    return values[0]


def _dynamic_symbol_table(obj: _Object, dynamic) -> tuple[list[tuple], tuple[int, int], int]:
    """The dynamic symbols, the dynamic string table's file span, and how many symbols the loader
    can reach (through the hash tables and relocations): the .dynsym section must describe exactly
    the table DT_SYMTAB points at."""
    symtab, strtab, strsz = _one(dynamic, DT_SYMTAB), _one(dynamic, DT_STRTAB), _one(dynamic, DT_STRSZ)
    if symtab is None or strtab is None or strsz is None:
        raise _Malformed("its dynamic section has no symbol or string table")
    if _one(dynamic, DT_SYMENT) not in (None, _SYM.size):
        raise _Malformed("its DT_SYMENT is not the ELF64 symbol size")
    found = [s for s in obj.sections if s.type == SHT_DYNSYM]
    if len(found) != 1 or found[0].addr != symtab:
        raise _Malformed("its DT_SYMTAB is not the .dynsym section")
    section = found[0]
    if obj.file_offset(symtab, section.size, "the dynamic symbol table") != section.offset:
        raise _Malformed("its .dynsym section is not where DT_SYMTAB points")
    str_off = obj.file_offset(strtab, strsz, "the dynamic string table")
    if not 0 < section.link < len(obj.sections) or obj.sections[section.link].offset != str_off:
        raise _Malformed("its DT_STRTAB is not the string table of .dynsym")
    symbols = obj.symbols(section)
    nsyms = len(symbols)
    if nsyms == 0:
        raise _Malformed("its dynamic symbol table is empty")
    _check_hash_tables(obj, dynamic, nsyms)
    return symbols, (str_off, str_off + strsz), nsyms


def _check_hash_tables(obj: _Object, dynamic, nsyms: int) -> None:
    """Symbol lookups (dlsym, binding) go through the hash tables: they must reach no symbol
    past the end of .dynsym, where this check would not have looked."""
    data = obj.data
    sysv = _one(dynamic, DT_HASH)
    if sysv is not None:
        off = obj.file_offset(sysv, 8, "DT_HASH")
        nbucket, nchain = struct.unpack_from("<II", data, off)
        off = obj.file_offset(sysv, 8 + 4 * (nbucket + nchain), "DT_HASH")
        if nchain != nsyms or any(v >= nsyms for v in struct.unpack_from(f"<{nbucket + nchain}I", data, off + 8)):
            raise _Malformed("its DT_HASH table reaches past the dynamic symbols")
    gnu = _one(dynamic, DT_GNU_HASH)
    if gnu is not None:
        off, avail = obj.file_span(gnu, "DT_GNU_HASH")
        if avail < 16:
            raise _Malformed("its DT_GNU_HASH table lies past the end of its segment")
        nbuckets, symoffset, bloom_size, _shift = struct.unpack_from("<IIII", data, off)
        buckets_at = 16 + 8 * bloom_size
        chains_at = buckets_at + 4 * nbuckets
        if chains_at > avail or symoffset > nsyms:
            raise _Malformed("its DT_GNU_HASH table lies past the end of its segment")
        terminated = set()  # chain walks from each bucket stop inside .dynsym and the table
        for start in struct.unpack_from(f"<{nbuckets}I", data, off + buckets_at):
            i = start
            while start and i not in terminated:
                if not symoffset <= i < nsyms or chains_at + 4 * (i - symoffset + 1) > avail:
                    raise _Malformed("its DT_GNU_HASH table reaches past the dynamic symbols")
                terminated.add(i)
                if struct.unpack_from("<I", data, off + chains_at + 4 * (i - symoffset))[0] & 1:
                    break
                i += 1
    if sysv is None and gnu is None:
        raise _Malformed("it has no symbol hash table")


def _check_tags(obj: _Object, dynamic, dynstr: tuple[int, int]) -> None:
    """Only tags that make the loader read tables; libm as the one library it may load."""
    benign = _BENIGN_TAGS | _MACHINE_TAGS[obj.machine]
    for tag in dynamic:
        if tag in _REFUSED_TAGS:
            name, why = _REFUSED_TAGS[tag]
            raise _refuse(f"has a {name} dynamic tag ({why})")
        if tag not in benign:
            raise _refuse(f"has an unexpected dynamic tag {tag:#x} (the loader may act on it)")
        if tag != DT_NEEDED:
            _one(dynamic, tag)
    for value in dynamic.get(DT_NEEDED, ()):
        name = _string(obj.data, dynstr[0], dynstr[1], value, "a DT_NEEDED entry")
        if name != MATH_LIBRARY:
            raise _refuse(f"needs the library {_shown(name)} (only the math library, {MATH_LIBRARY}, "
                          "may be loaded with a kernel)")
    flags = _one(dynamic, DT_FLAGS) or 0
    if flags & DF_TEXTREL:
        raise _refuse("has DF_TEXTREL in DT_FLAGS (the loader would make its code writable)")
    if flags & DF_STATIC_TLS:
        raise _refuse("has DF_STATIC_TLS in DT_FLAGS (thread-local storage)")
    if flags & ~_ALLOWED_FLAGS:
        raise _refuse(f"has unexpected DT_FLAGS bits {flags & ~_ALLOWED_FLAGS:#x} (the loader may act on them)")
    flags_1 = _one(dynamic, DT_FLAGS_1) or 0
    if flags_1 & ~_ALLOWED_FLAGS_1:
        raise _refuse(f"has unexpected DT_FLAGS_1 bits {flags_1 & ~_ALLOWED_FLAGS_1:#x} (the loader may "
                      "act on them)")


def _check_relocations(obj: _Object, dynamic, nsyms: int) -> None:
    """Every relocation the loader applies: an allowed type, a symbol in .dynsym, writable memory."""
    tables: set[tuple[int, int]] = set()
    for addr_tag, size_tag in ((DT_RELA, DT_RELASZ), (DT_JMPREL, DT_PLTRELSZ)):
        addr, size = _one(dynamic, addr_tag), _one(dynamic, size_tag)
        if addr is None and size is None:
            continue
        if addr is None or size is None or size % _RELA.size:
            raise _Malformed("its relocation table is described inconsistently")
        tables.add((obj.file_offset(addr, size, "a relocation table"), size))
    if _one(dynamic, DT_RELAENT) not in (None, _RELA.size):
        raise _Malformed("its DT_RELAENT is not the ELF64 RELA size")
    if DT_JMPREL in dynamic and _one(dynamic, DT_PLTREL) != DT_RELA:
        raise _Malformed("its PLT relocations are not RELA")
    for s in obj.sections:
        if s.flags & SHF_ALLOC and s.type == SHT_REL:
            raise _refuse(f"has REL relocations in {_shown(s.name)} (this machine uses RELA only)")
        if s.flags & SHF_ALLOC and s.type == SHT_RELA and s.size:
            if s.size % _RELA.size:
                raise _Malformed(f"its relocation section {s.name} has an odd size")
            tables.add((s.offset, s.size))
    allowed = ALLOWED_RELOCATIONS[obj.machine]
    for offset, size in sorted(tables):
        for where, info, _addend in _RELA.iter_unpack(obj.data[offset:offset + size]):
            rtype, sym = info & 0xFFFFFFFF, info >> 32
            if rtype == IRELATIVE[obj.machine]:
                raise _refuse(f"has an IRELATIVE relocation (an ifunc resolver: {_LOAD_TIME_CODE})")
            if rtype in _TLS_RELOCATIONS[obj.machine]:
                raise _refuse(f"has a thread-local storage relocation (type {rtype}): thread_local is not allowed")
            if rtype == _COPY[obj.machine]:
                raise _refuse("has a COPY relocation (only programs may copy a library's data)")
            if rtype not in allowed:
                raise _refuse(f"has a relocation of unexpected type {rtype} (allowed: "
                              f"{', '.join(allowed.values())})")
            if sym >= nsyms:
                raise _Malformed("a relocation names a symbol past the dynamic symbols")
            if not obj.writable(where, 8):
                raise _refuse(f"has a relocation that writes to read-only memory at {where:#x} (a text "
                              "relocation: the loader would make its code writable)")
    relr, relrsz = _one(dynamic, DT_RELR), _one(dynamic, DT_RELRSZ)
    if relr is not None or relrsz is not None:
        if relr is None or relrsz is None or relrsz % 8 or _one(dynamic, DT_RELRENT) not in (None, 8):
            raise _Malformed("its RELR relocation table is described inconsistently")
        _check_relr(obj, obj.file_offset(relr, relrsz, "the RELR relocation table"), relrsz)


def _check_relr(obj: _Object, offset: int, size: int) -> None:
    """RELR packs RELATIVE relocations: an address, then bitmaps of the 63 words after it."""
    where = 0
    for (entry,) in struct.iter_unpack("<Q", obj.data[offset:offset + size]):
        if not entry & 1:
            targets = [entry]
            where = entry + 8
        else:
            targets = [where + 8 * i for i in range(63) if entry >> (i + 1) & 1]
            where += 63 * 8
        for target in targets:
            if not obj.writable(target, 8):
                raise _refuse(f"has a relocation that writes to read-only memory at {target:#x} (a text "
                              "relocation: the loader would make its code writable)")


def _check_symbols(obj: _Object) -> None:
    """No ifunc or TLS symbol anywhere; only functions inside executable sections."""
    tables = [(s, obj.symbols(s)) for s in obj.sections if s.type in (SHT_SYMTAB, SHT_DYNSYM)]
    for section, symbols in tables:
        strings = None
        for name_off, info, _other, shndx, _value, _size in symbols[1:]:
            kind = info & 0xF
            if kind == STT_GNU_IFUNC or kind == STT_TLS:
                strings = strings or obj.section_strings(section)
                name = _shown(_string(obj.data, *strings, name_off, "a symbol name"))
                if kind == STT_GNU_IFUNC:
                    raise _refuse(f"has an ifunc symbol {name} ({_LOAD_TIME_CODE}: its resolver runs "
                                  "inside the loader)")
                raise _refuse(f"has a thread-local symbol {name} (thread-local storage): thread_local "
                              "is not allowed")
            if kind not in (STT_FUNC, STT_SECTION, STT_FILE) and 0 < shndx < len(obj.sections) \
                    and obj.sections[shndx].flags & SHF_EXECINSTR:
                strings = strings or obj.section_strings(section)
                name = _shown(_string(obj.data, *strings, name_off, "a symbol name"))
                raise _refuse(f"has data {name} inside its executable section {obj.sections[shndx].name} "
                              "(bytes placed there could run as machine code without any asm)")


def _check_undefined(obj: _Object, dynsym: list[tuple]) -> None:
    """What the kernel takes from outside: the runner's `__mg_*`, the math library, the builtins."""
    dynsym_section = next(s for s in obj.sections if s.type == SHT_DYNSYM)
    strings = obj.section_strings(dynsym_section)
    names = [_string(obj.data, *strings, sym[0], "a symbol name")
             for sym in dynsym[1:] if sym[3] == 0 and sym[0]]
    hooks = sorted(n for n in names if n in EXIT_HOOKS)
    if hooks:
        raise SubmissionError(
            f"the kernel references {_shown(hooks[0])}, which registers code to run at exit or at thread "
            "exit (static objects with destructors and thread_local are not allowed)")
    allowed = math_library_symbols() | ALWAYS_ALLOWED | TSAN_CALLBACKS
    foreign = sorted(n for n in names if not n.startswith("__mg_") and n not in allowed)
    if foreign:
        raise SubmissionError(
            f"the kernel references {', '.join(_shown(n) for n in foreign[:8])}: device code may only "
            "call the CUDA device API and the math library")
