"""The first sandbox wall: refuse built kernel objects that could run code before the sandbox is up.

A shared object's initialisers (`.init_array`, `.ctors`, ...) run inside `dlopen`, before the runner
enters seccomp, and a kernel that links against arbitrary libc functions could reach the system.
So the object must carry no initialiser or TLS sections and may only reference the runner's own
`__mg_*` entry points, the math library and the memory builtins. Seccomp is the second, independent
wall. The parser reads just the ELF64 little-endian headers it needs; no external tool is run.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

from .errors import SubmissionError

FORBIDDEN_SECTIONS = (".init_array", ".preinit_array", ".ctors", ".init", ".tdata", ".tbss")
ALWAYS_ALLOWED = frozenset({"memcpy", "memset", "memmove", "memcmp"})


def _sections(data: bytes) -> dict[str, tuple[int, int, int, int, int]]:
    """Section name -> (type, offset, size, link, entsize)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = headers[shstrndx][4]

    def name(off: int) -> str:
        end = data.index(b"\0", names_off + off)
        return data[names_off + off:end].decode()

    return {name(h[0]): (h[1], h[4], h[5], h[6], h[9]) for h in headers}


def _dynamic_symbols(data: bytes, sections: dict) -> list[tuple[str, bool]]:
    """(name, defined) for every dynamic symbol."""
    if ".dynsym" not in sections:
        return []
    _, off, size, link, entsize = sections[".dynsym"]
    str_off = next(v[1] for k, v in sections.items() if k == ".dynstr")
    symbols = []
    for i in range(1, size // entsize):
        st_name, _info, _other, shndx = struct.unpack_from("<IBBH", data, off + i * entsize)
        end = data.index(b"\0", str_off + st_name)
        symbols.append((data[str_off + st_name:end].decode(), shndx != 0))
    return symbols


@functools.lru_cache(maxsize=1)
def math_library_symbols() -> frozenset[str]:
    """Every function the loaded math library defines (found through this process's own maps)."""
    # CPython itself links the math library, so it is mapped in this process already.
    paths = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
             if "/libm.so" in line or "/libm-" in line}
    names: set[str] = set()
    for path in paths:
        data = Path(path).read_bytes()
        names.update(n for n, defined in _dynamic_symbols(data, _sections(data)) if defined)
    if not names:
        raise RuntimeError("could not locate the math library's symbols in /proc/self/maps")
    return frozenset(names)


def static_shared_bytes(path: str | Path) -> int:
    """Bytes of static `__shared__` storage in a built kernel (its `mg_shared` section)."""
    sections = _sections(Path(path).read_bytes())
    return sections["mg_shared"][2] if "mg_shared" in sections else 0


def check_kernel_object(path: str | Path) -> None:
    """Raise `SubmissionError` if the built object could act before or outside the sandbox."""
    data = Path(path).read_bytes()
    sections = _sections(data)
    for name in FORBIDDEN_SECTIONS:
        if name in sections and sections[name][2] > 0:
            what = "thread-local storage" if name.startswith(".t") else "code that runs when it is loaded"
            raise SubmissionError(
                f"the kernel's object has a {name} section ({what}): global constructors, "
                "static objects with non-trivial initialisers and thread_local are not allowed")
    allowed = math_library_symbols() | ALWAYS_ALLOWED
    foreign = sorted(n for n, defined in _dynamic_symbols(data, sections)
                     if not defined and n and not n.startswith("__mg_") and n not in allowed)
    if foreign:
        raise SubmissionError(
            f"the kernel references {', '.join(repr(n) for n in foreign[:8])}: device code may only "
            "call the CUDA device API and the math library")
