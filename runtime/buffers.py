"""Device memory for the CPU emulator: every buffer of a batch in one memfd, fenced by guard pages.

Each buffer gets its own pages, with its data placed at the *end* (16-byte aligned, as vector loads
need) so that reading or writing one element past it lands on an inaccessible guard page; inputs
are mapped read-only by the runner. Two gaps remain, both documented trade-offs: an access up to
15 bytes past a buffer whose size is not a multiple of 16 stays inside its last aligned slot, and
an access *before* the start lands in the unused head of the buffer's first page (it faults only
once it crosses into the guard page below). The runner maps the same memfd, so outputs need no
copy back.

Poison. Memory a kernel did not write holds whatever a GPU allocation held before: never a
value a kernel may rely on. So outputs and `init = "poison"` scratch, and the slack around every
buffer (the head of its first page and the tail after its data, inputs' included: reads there are
out-of-bounds reads that do not fault), are filled with poison drawn per case and buffer
(`Poison`): each buffer draws one family, and the family draws its values element by element.

| family | floating point (float16, bfloat16, float32, float64) | integers | bool |
| --- | --- | --- | --- |
| `nan` | quiet NaNs, random sign and payload | - | - |
| `large+` / `large-` | +/- one of four large finite magnitudes (float32: 1e30, 1e36, 3e38, FLT_MAX; float16: 1e4, 3e4, 6e4, 65504; ...) | signed: in [2^(b-2), 2^(b-1)) or [-2^(b-1), -2^(b-2)); unsigned: top bit (and for `-` the next) set | - |
| `large±` | the same with a random sign per element | either | - |
| `bits` | uniformly random bits | uniformly random bits | - |
| `true` / `mixed` | - | - | bytes >= 2 (true, never the canonical 1) / those or 0 at random |

The draw is deterministic: a case's seed is a digest of what the case is (its inputs' names,
dtypes, shapes and bytes, its outputs' names, dtypes and shapes; `case_digest`), never of the
kernel or of the case's place in a batch, so the same case always gets the same bytes, a kill
matrix's mutants all see the same poison, and `reset` restores exactly the first fill. The values
come from PCG64's raw stream (`random_raw`), stable across numpy versions. Element `i` of a
buffer's data, element `i` past its end and element `i` before its start come from three streams
of their own, so the `cuda` backend, whose slack is 256 canary bytes on each side rather than a
page, fills the same positions with the same values. `init = "zero"` scratch is zero (its
slack is poisoned); inputs' data are the inputs' bytes, an `inout` output's its input's, a filled
buffer's its fill value in every element (`initial_bytes`, for both backends).

Each buffer of each case draws its family on its own (each with probability 1/5, integers 1/4),
so a kernel whose output depends on what its memory held first (an `fmaxf` accumulator never
initialised, which a fixed NaN poison made an identity; a read one past the end, which zero slack
made a no-op for a sum) is wrong on some case of any batch of a few cases, and a correct kernel's
verdict never depends on it. Limits: one case is one draw (a `large-` poison is `fmaxf`'s identity
too); random bits can be small numbers, so under `bits` an element never written whose reference
is near zero can pass; the poison is a function of the case, not a secret (the fresh draws of the
gate are). Shared memory is poisoned by the runner at every block start, with a family drawn per
case from `DeviceMemory.salt` (all-ones bytes, a large finite value of either sign, random bits).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from .plan import ITEMSIZE, BufferSpec, ResolvedPlan

PAGE = mmap.PAGESIZE
ALIGN = 16

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
#: The poison families a buffer may draw, by the kind of its dtype (module docstring).
FLOAT_FAMILIES = ("nan", "large+", "large-", "large±", "bits")
INT_FAMILIES = ("large+", "large-", "large±", "bits")
BOOL_FAMILIES = ("true", "mixed")

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bf16_bits(values) -> np.ndarray:
    """bfloat16 bit patterns of float32 values, by truncation (the values here stay finite)."""
    return (np.array(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


#: Four large finite magnitudes per floating-point dtype, as bit patterns.
_LARGE = {
    "float32": np.array([1e30, 1e36, 3e38, np.finfo(np.float32).max], np.float32).view(np.uint32),
    "float64": np.array([1e30, 1e100, 1e300, np.finfo(np.float64).max], np.float64).view(np.uint64),
    "float16": np.array([1e4, 3e4, 6e4, 65504], np.float16).view(np.uint16),
    "bfloat16": np.append(_bf16_bits([1e30, 1e35, 3e38]), np.uint16(0x7F7F)),   # 0x7f7f: the largest
}
#: Exponent all ones plus the quiet bit: OR-ed onto random sign and payload bits, a quiet NaN.
_QUIET_NAN = {"float32": 0x7FC00000, "float64": 0x7FF8 << 48, "float16": 0x7E00, "bfloat16": 0x7FC0}


def numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def families(dtype: str) -> tuple[str, ...]:
    """The poison families a buffer of `dtype` draws from."""
    if dtype in FLOAT_DTYPES:
        return FLOAT_FAMILIES
    return BOOL_FAMILIES if dtype == "bool" else INT_FAMILIES


def _digest(entries: Iterable[tuple[str, str, str, tuple[int, ...]]],
            inputs: Mapping[str, np.ndarray]) -> bytes:
    h = hashlib.sha256(b"mutagym poison 1\0")
    for role, name, dtype, shape in sorted(entries, key=lambda e: (e[0], e[1])):
        h.update(repr((role, name, dtype, tuple(int(n) for n in shape))).encode() + b"\0")
        if role == "input":
            h.update(np.ascontiguousarray(inputs[name]).reshape(-1).view(np.uint8))
    return h.digest()


def case_digest(specs: Iterable[BufferSpec], inputs: Mapping[str, np.ndarray]) -> bytes:
    """The seed of one case's poison: its inputs (names, dtypes, shapes, bytes) and outputs (names,
    dtypes, shapes), as a plan lays them out; scratch buffers, launches and kernels do not enter."""
    return _digest(((s.role, s.name, s.dtype, s.shape) for s in specs if s.role in ("input", "output")),
                   inputs)


def run_case_digest(case) -> bytes:
    """`case_digest` of a `RunCase`, without a plan (the same bytes as its plan's)."""
    entries = [("input", name, np.dtype(a.dtype).name, np.shape(a)) for name, a in case.inputs.items()]
    entries += [("output", name, dtype, shape) for name, (shape, dtype) in case.outputs.items()]
    return _digest(entries, case.inputs)


class Poison:
    """The poison of one buffer of one case: its family and, element by element, its values in
    three streams: `data` (element i of the buffer), `after` (element i past its end) and
    `before` (element i + 1 before its start)."""

    def __init__(self, digest: bytes, name: str, dtype: str):
        self.dtype = dtype
        self.itemsize = ITEMSIZE[dtype]
        self._key = hashlib.sha256(digest + b"\0buffer\0" + name.encode()).digest()
        choices = families(dtype)
        self.family = choices[int(self._stream("family").random_raw()) % len(choices)]

    def _stream(self, part: str) -> np.random.PCG64:
        seed = hashlib.sha256(self._key + b"\0" + part.encode()).digest()[:16]
        return np.random.PCG64(int.from_bytes(seed, "little"))

    def elements(self, part: str, count: int) -> np.ndarray:
        """`count` elements of stream `part`, as unsigned integers of the dtype's width."""
        width = _UINT[self.itemsize]
        words = -(-count * self.itemsize // 8)
        u = self._stream(part).random_raw(words).view(width)[:count]
        return _shape(u, self.dtype, self.family)

    def data(self, nbytes: int) -> np.ndarray:
        """The bytes of the buffer's own elements (`nbytes` of them)."""
        return self.elements("data", nbytes // self.itemsize).view(np.uint8)

    def after(self, nbytes: int) -> np.ndarray:
        """The `nbytes` bytes right after the buffer's end."""
        return self.elements("after", nbytes // self.itemsize).view(np.uint8)

    def before(self, nbytes: int) -> np.ndarray:
        """The `nbytes` bytes right before the buffer's start, in address order."""
        return np.ascontiguousarray(self.elements("before", nbytes // self.itemsize)[::-1]).view(np.uint8)

    def values(self, shape: tuple[int, ...]) -> np.ndarray:
        """The buffer's poison as an array of its dtype: what an element nobody wrote reads."""
        count = int(np.prod(shape, dtype=np.int64))
        return self.elements("data", count).view(numpy_dtype(self.dtype)).reshape(shape)


def _shape(u: np.ndarray, dtype: str, family: str) -> np.ndarray:
    """Random unsigned words `u` made into `family`'s values of `dtype`, in place where it can."""
    width = u.dtype.type
    bits = 8 * u.itemsize
    sign = width(1 << (bits - 1))
    if family == "bits":
        return u
    if dtype in FLOAT_DTYPES:
        if family == "nan":
            quiet = _QUIET_NAN[dtype]
            np.bitwise_and(u, width(int(sign) | ((quiet & -quiet) - 1)), out=u)   # sign, payload below the quiet bit
            np.bitwise_or(u, width(quiet), out=u)
            return u
        signs = np.bitwise_and(u, sign) if family == "large±" else None
        out = _LARGE[dtype][np.bitwise_and(u, width(3))]
        if family == "large-":
            np.bitwise_or(out, sign, out=out)
        elif signs is not None:
            np.bitwise_or(out, signs, out=out)
        return out
    if dtype == "bool":
        if family == "mixed":
            keep = np.bitwise_and(u, width(1))
            np.bitwise_or(u, width(2), out=u)
            np.multiply(u, keep, out=u)
            return u
        return np.bitwise_or(u, width(2), out=u)
    quarter = width(1 << (bits - 2))
    if dtype.startswith("uint"):
        np.bitwise_or(u, sign if family != "large-" else width(int(sign) | int(quarter)), out=u)
        return u
    top = np.bitwise_and(u, sign) if family == "large±" else None
    np.bitwise_and(u, width(int(quarter) - 1), out=u)
    if family == "large+":
        np.bitwise_or(u, quarter, out=u)
    elif family == "large-":
        np.bitwise_or(u, sign, out=u)
    else:   # top bit set: 10.. (negative), clear: 01.. (positive)
        np.bitwise_or(u, top, out=u)
        np.bitwise_or(u, np.bitwise_xor(np.right_shift(top, width(1)), quarter), out=u)
    return u


def initial_bytes(buf: BufferSpec, poison: Poison, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """What a writable buffer holds before the first launch, as bytes, on either backend: its
    poison, zeros, its fill value in every element, or (an `inout` output) its input's data."""
    if buf.init == "zero":
        return np.zeros(buf.nbytes, np.uint8)
    if buf.init == "fill":
        return np.frombuffer(buf.fill * (buf.nbytes // len(buf.fill)), np.uint8)
    if buf.init == "copy":
        return np.ascontiguousarray(inputs[buf.source]).reshape(-1).view(np.uint8)
    return poison.data(buf.nbytes)


def initial_output(case, name: str) -> np.ndarray:
    """What output `name` of a `RunCase` holds before any kernel writes it, on either backend."""
    shape, dtype = case.outputs[name]
    return Poison(run_case_digest(case), name, dtype).values(tuple(shape))


@dataclass(frozen=True)
class Placement:
    """Where one buffer of one case lives in the memfd."""

    case: int
    name: str
    role: str
    dtype: str
    shape: tuple[int, ...]
    offset: int      # first data byte
    nbytes: int
    region: tuple[int, int]   # [start, end) of its pages, guards excluded


def frozen(array: np.ndarray) -> bool:
    """Read-only, and so is every array or buffer it views: its contents cannot change under us
    (an array fetched from Ray's object store is; one made read-only over a writable base is not)."""
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    if array is None:
        return True
    try:
        return memoryview(array).readonly
    except TypeError:
        return False


def _same_frozen_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(a[k] is b[k] and frozen(a[k]) for k in a)


def _pages(nbytes: int) -> int:
    """Bytes of the whole pages that hold a buffer of *nbytes* (one page at least)."""
    return max(1, -(-nbytes // PAGE)) * PAGE


def judge_bytes(plans: Iterable[ResolvedPlan], shadow_bytes_per_byte: int = 0) -> int:
    """What laying *plans* out costs the judge's machine, known before anything is allocated: the
    memfd (`DeviceMemory`: every page of it is filled), the copy of each writable buffer's pages kept
    for `reset`, the draw of the largest writable buffer's poison (`Poison.elements` and `_shape`
    hold about three times its size at once), and the runner's shadow of the writable pages
    (*shadow_bytes_per_byte*: the race check's, which a kernel writing everything touches)."""
    size, writable, largest = PAGE, 0, 0
    for plan in plans:
        for buf in plan.buffers:
            size += _pages(buf.nbytes) + PAGE
            if buf.role != "input":
                writable += _pages(buf.nbytes)
                largest = max(largest, _pages(buf.nbytes))
    return size + writable + 3 * largest + shadow_bytes_per_byte * writable


class DeviceMemory:
    """All buffers of a batch of resolved plans, laid out and filled."""

    def __init__(self, plans: list[ResolvedPlan], inputs: list[dict[str, np.ndarray]]):
        self.placements: list[dict[str, Placement]] = []
        self.protect: list[tuple[int, int, int]] = []   # (offset, length, 0 none | 1 read-only)
        offset = PAGE
        self.protect.append((0, PAGE, 0))
        for case, plan in enumerate(plans):
            placed = {}
            for buf in plan.buffers:
                pages = _pages(buf.nbytes)
                data = offset + pages - (-(-buf.nbytes // ALIGN) * ALIGN)
                placed[buf.name] = Placement(case, buf.name, buf.role, buf.dtype, tuple(buf.shape),
                                             data, buf.nbytes, (offset, offset + pages))
                if buf.role == "input":
                    self.protect.append((offset, pages, 1))
                self.protect.append((offset + pages, PAGE, 0))
                offset += pages + PAGE
            self.placements.append(placed)
        self.size = offset
        self.fd = os.memfd_create("mutagym-buffers", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.size)
        self.map = mmap.mmap(self.fd, self.size)
        self.plans = plans
        self.inputs = inputs
        #: (offset, bytes) of each writable buffer's pages as first filled: what `reset` copies back.
        self._initial: list[tuple[int, np.ndarray]] = []
        self._fill(inputs)

    @property
    def nbytes(self) -> int:
        """What this memory holds: the memfd and the initial contents kept for `reset`."""
        return self.size + sum(initial.nbytes for _, initial in self._initial)

    def holds(self, plans: list[ResolvedPlan], inputs: list[dict[str, np.ndarray]]) -> bool:
        """Whether this memory already holds exactly these buffers and inputs, so that a run of
        another kernel on the same cases needs only `reset`: same buffers case by case, and inputs
        that are the very arrays copied in, read-only (so they cannot have changed since)."""
        return (len(plans) == len(self.plans)
                and all(a.buffers == b.buffers for a, b in zip(plans, self.plans))
                and all(_same_frozen_arrays(a, b) for a, b in zip(inputs, self.inputs)))

    def _fill(self, inputs: list[dict[str, np.ndarray]]) -> None:
        """Copy in the inputs and fill outputs and scratch (`initial_bytes`: poison, zeros, a fill,
        an input's copy), with the poison around each buffer's data; keep each writable buffer's
        pages as filled (the runner maps inputs' pages read-only: they never need restoring)."""
        self._digests = []
        for case, (plan, case_inputs) in enumerate(zip(self.plans, inputs)):
            digest = case_digest(plan.buffers, case_inputs)
            self._digests.append(digest)
            for buf in plan.buffers:
                p, poison = self.placements[case][buf.name], Poison(digest, buf.name, buf.dtype)
                start, end, stop = p.region[0], p.offset + p.nbytes, p.region[1]
                view = np.frombuffer(self.map, dtype=np.uint8, count=stop - start, offset=start)
                view[:p.offset - start] = poison.before(p.offset - start)
                view[end - start:] = poison.after(stop - end)
                data = view[p.offset - start:end - start]
                if buf.role == "input":
                    data[:] = np.ascontiguousarray(case_inputs[buf.name]).reshape(-1).view(np.uint8)
                else:
                    data[:] = initial_bytes(buf, poison, case_inputs)
                    self._initial.append((start, view.copy()))

    def salt(self, case: int) -> int:
        """A 64-bit draw from the case's digest for what the runner leaves to chance as a GPU does
        (the clock's start and step, shared memory's content at block start): the same case
        draws the same in any batch, and no fixed value tells the emulator apart."""
        return int.from_bytes(hashlib.sha256(self._digests[case] + b"\0device draws").digest()[:8], "little")

    def reset(self) -> None:
        """Outputs and scratch back to their initial contents, for another run of the same batch
        or another kernel on the same cases (inputs are read-only to the runner, so they need no
        copy). The poison around each writable buffer's data, which a kernel can write out of
        bounds without faulting (see the module docstring), is restored too: after a reset the
        memory is byte for byte as freshly laid out and filled (a copy of the first fill, which
        drawing the poison again from the same seeds would only repeat, at a higher cost)."""
        for start, initial in self._initial:
            np.frombuffer(self.map, dtype=np.uint8, count=initial.size, offset=start)[:] = initial

    def read(self, case: int, name: str) -> np.ndarray:
        p = self.placements[case][name]
        dtype = numpy_dtype(p.dtype)
        count = p.nbytes // dtype.itemsize
        return np.frombuffer(self.map, dtype=dtype, count=count, offset=p.offset).reshape(p.shape).copy()

    def locate(self, case: int, offset: int) -> str:
        """Describe the byte at `offset` for a fault message: which buffer, which element."""
        nearest, distance = None, None
        for p in self.placements[case].values():
            if p.offset <= offset < p.offset + p.nbytes:
                element = (offset - p.offset) // numpy_dtype(p.dtype).itemsize
                return f"element {element} of {p.role} '{p.name}'"
            gap = offset - (p.offset + p.nbytes) if offset >= p.offset + p.nbytes else p.offset - offset
            if p.region[0] - PAGE <= offset < p.region[1] + PAGE and (distance is None or gap < distance):
                nearest, distance = p, gap
        if nearest is None:
            return f"byte {offset} of device memory, outside every buffer"
        itemsize = numpy_dtype(nearest.dtype).itemsize
        if offset >= nearest.offset + nearest.nbytes:
            element = (offset - nearest.offset) // itemsize
            count = nearest.nbytes // itemsize
            return f"past the end of {nearest.role} '{nearest.name}' (element {element}, size {count})"
        return f"before the start of {nearest.role} '{nearest.name}' ({nearest.offset - offset} bytes before)"

    def address_args(self, case: int, name: str) -> int:
        """Where an argument points: buffer *name*'s first byte, or `name+BYTES` past it
        (`plan.ArgBinding.buffer`)."""
        base, _, offset = name.partition("+")
        return self.placements[case][base].offset + int(offset or 0)

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)
