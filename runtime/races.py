"""The race, state and spin checks of the CPU emulator: how kernels are built for them, the switch,
and the words of their findings.

A GPU runs a block's threads and a grid's blocks at once; the emulator runs them one at a time, so
an unordered pair of accesses shows as a wrong value only under some thread order, and a lost
update never. The checks (csrc/race.h) look at ordering instead: g++'s thread-sanitizer pass
instruments every load and store of the kernel with a call into the runner (the sanitizer's own
runtime is never linked), which keeps a shadow record per word of device memory. What they find is
an outcome of its own: `data_race` (two threads, one access unordered against the other),
`stateful_kernel` (a launch reads `__device__` data an earlier launch changed), or a `sync_error`
naming a spin (a thread polling a value no running thread can change).

On by default; `MUTAGYM_RACE_CHECK=0` (or `race_check=False` where kernels are built) turns the
instrumentation off, for speed studies: atomics and fences still report to the runner, so spins
and state kept through atomics are still found.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

from .bounded import Limits, private_dir, run_bounded
from .errors import CompileError, InfrastructureError

RACE_ENV = "MUTAGYM_RACE_CHECK"
#: The sanitizer pass without its function entry and exit hooks, telling volatile accesses apart
#: (they are relaxed atomics in the PTX memory model, never a data race); line tables (-g1) so that
#: a finding names the submission's line.
RACE_FLAGS = ("-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0",
              "--param=tsan-distinguish-volatile=1", "-g1")
#: The sanitizer's module constructor (priority 99: it calls `__tsan_init`), taken out of the object
#: before it is linked; the object wall refuses every other initialiser as before.
SANITIZER_CONSTRUCTOR_SECTION = ".init_array.00099"
#: The instrumentation's entry points, which the runner exports (csrc/race.h): the only imports of a
#: kernel object besides the math library and mutagym's own `__mg_*` calls.
TSAN_CALLBACKS = frozenset(
    {"__tsan_init", "__tsan_func_entry", "__tsan_func_exit", "__tsan_vptr_update", "__tsan_vptr_read",
     "__tsan_read_range", "__tsan_write_range"}
    | {f"__tsan_{kind}{n}" for n in (1, 2, 4, 8, 16)
       for kind in ("read", "write", "unaligned_read", "unaligned_write", "volatile_read", "volatile_write",
                    "unaligned_volatile_read", "unaligned_volatile_write")})
#: Shadow memory: 16 bytes per 4 bytes of device memory, reserved for all of it (touched only where
#: a kernel may write); the runner's address-space budget grows by this factor of the buffers.
SHADOW_BYTES_PER_BYTE = 4


def race_check_enabled(race_check: bool | None = None) -> bool:
    """*race_check* if given, else `MUTAGYM_RACE_CHECK` (default on)."""
    if race_check is not None:
        return race_check
    value = os.environ.get(RACE_ENV, "1").strip().lower()
    if value in ("1", "on", "true", "yes", ""):
        return True
    if value in ("0", "off", "false", "no"):
        return False
    raise InfrastructureError(f"{RACE_ENV}={value!r}: use 1/on or 0/off")


_KINDS = {
    "write-write": ("writes", "wrote"),
    "write-read": ("reads", "wrote"),
    "read-write": ("writes", "read"),
}


def describe_race(detail: str, locate, line_of) -> str:
    """The runner's terse race line as a sentence naming both threads, the line and the element.

    *locate(space, number)* names the element: space `offset` (a byte of device memory), `static`
    (an address in the object: a `__shared__` array) or `dynamic` (a byte of dynamic shared
    memory); *line_of(pc)* is the submission's line of an offset into the object, or None."""
    head, _, where = detail.partition(" where ")
    words = head.split()
    kind, space, number = words[0], words[1], int(words[2])
    fields = dict(zip(words[3::2], words[4::2]))
    here = dict(zip(where.split()[::2], where.split()[1::2]))
    now, before = _KINDS.get(kind, ("accesses", "accessed"))
    line = line_of(int(fields.get("pc", "0")))
    at = f" at line {line}" if line else ""
    return (f"data race on {locate(space, number)}: thread {here.get('thread', '(?)')} of block "
            f"{here.get('block', '(?)')} {now} it{at} (launch {here.get('launch', '?')}), and thread "
            f"{fields.get('other', '(?)')} of block {fields.get('block', '(?)')} {before} it in the same "
            f"launch with nothing ordering the two (__syncthreads within a block, a warp collective both "
            f"lanes take part in, __threadfence then an atomic between blocks); make the accesses atomic "
            f"or order them")


def describe_spin(detail: str, locate) -> str:
    """The runner's spin line as a sentence; *locate(byte)* names a device-memory element."""
    head, _, where = detail.partition(" where ")
    words = head.split()
    fields = dict(zip(words[1::2], words[2::2]))
    target = locate(int(fields["offset"])) if "offset" in fields else "an address outside device memory"
    return (f"{where} waits for {target} to change: it polled it {fields.get('count', '?')} times with "
            f"atomics or volatile loads and saw the same value. Here one thread runs at a time between "
            f"barriers and one block at a time, so a wait on another thread or block (a spin lock, a "
            f"ticket, a single-pass scan's look-back) can never complete; order the work with "
            f"__syncthreads within a block and separate launches between blocks")


def describe_state(detail: str, symbol_at) -> str:
    """The runner's stateful-kernel line as a sentence; *symbol_at(offset)* names the variable."""
    head, _, where = detail.partition(" where ")
    words = head.split()
    name = symbol_at(int(words[1])) if len(words) > 1 else None
    what = f"__device__ variable '{name}'" if name else "the kernel's __device__ data"
    return (f"{where}: reads {what}, which an earlier launch changed: a kernel must not keep state "
            f"between launches (on a GPU its result would depend on how often it ran); rewrite "
            f"__device__ scratch before reading it in every launch")


#: What reading an object's line table or symbols may take (binutils on a kernel's own object).
_INSPECT_LIMITS = Limits(wall_s=10.0, cpu_s=5, memory_bytes=256 << 20, file_bytes=1 << 20)


def binutils(tool: str, args: list[str], object_path: Path, *, required: bool = False,
             capture_bytes: int = _INSPECT_LIMITS.capture_bytes) -> str:
    """*tool*'s stdout on a copy of the object, in a bounded child, up to *capture_bytes*; "" when
    it is missing or fails. Where the answer is *required*, a missing tool or a failure is an
    InfrastructureError, and a limit hit the kernel's CompileError (its object is what took so long)."""
    exe = shutil.which(tool)
    if not exe:
        if required:
            raise InfrastructureError(f"{tool} was not found: race-checked kernels need it (apt-get install binutils)")
        return ""
    limits = dataclasses.replace(_INSPECT_LIMITS, capture_bytes=capture_bytes)
    with private_dir("mg-inspect-") as work:
        shutil.copyfile(object_path, work / "kernel.so")
        try:
            proc = run_bounded([exe, *args, "kernel.so"], what=tool, limits=limits, cwd=work)
        except CompileError:
            if required:
                raise
            return ""
    if proc.returncode != 0 and required:
        raise InfrastructureError(f"{tool} failed on a kernel object: {proc.stderr.decode(errors='replace')[-300:]}")
    return proc.stdout.decode(errors="replace") if proc.returncode == 0 else ""


def source_line(object_path: Path, pc: int) -> int | None:
    """The submission's line of the instruction at offset *pc* of the object, if its line table
    (the race-checked build's `-g1`) says; the instrumentation call returns just after the access."""
    out = binutils("addr2line", [f"{max(pc - 1, 0):#x}", "-e"], object_path)
    match = re.search(r"submission\.cu(?:\.cpp)?:(\d+)", out)
    return int(match.group(1)) if match else None


def _data_symbols(object_path: Path) -> list[tuple[int, int, str]]:
    """(address, size, demangled name) of the object's defined data symbols."""
    found = []
    for line in binutils("nm", ["-S", "-C", "--defined-only"], object_path).splitlines():
        parts = line.split(maxsplit=3)
        if len(parts) == 4 and parts[2] in "bBdD":
            found.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return found


def symbol_at(object_path: Path, address: int) -> str | None:
    """The name of the object's data symbol that holds *address* (an offset into the object)."""
    return next((name for start, size, name in _data_symbols(object_path) if start <= address < start + size),
                None)


def shared_element(object_path: Path, address: int) -> str:
    """A byte of static shared memory named by its `__shared__` array (*address*: in the object)."""
    for start, size, name in _data_symbols(object_path):
        if start <= address < start + size:
            return f"byte {address - start} of __shared__ '{name.rpartition('::')[2]}'"
    return "a byte of static shared memory"
