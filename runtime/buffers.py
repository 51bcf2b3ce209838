"""Device memory for the CPU emulator: every buffer of a batch in one memfd, fenced by guard pages.

Each buffer gets its own pages, with its data placed at the *end* (16-byte aligned, as vector loads
need) so that reading or writing one element past it lands on an inaccessible guard page; inputs
are mapped read-only by the runner. Two gaps remain, both documented trade-offs: an access up to
15 bytes past a buffer whose size is not a multiple of 16 stays inside its last aligned slot, and
an access *before* the start lands in the unused head of the buffer's first page (it faults only
once it crosses into the guard page below). Outputs and poison-initialised scratch are filled with a poison
pattern (all-ones bytes: NaN for floating point types, 0xcd bytes for integers) so that elements a
kernel never writes cannot pass a comparison. The runner maps the same memfd, so outputs need no
copy back.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

import numpy as np

from .plan import ResolvedPlan

PAGE = mmap.PAGESIZE
ALIGN = 16


def numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def poison_byte(dtype: str) -> int:
    return 0xFF if dtype in ("float16", "bfloat16", "float32", "float64") else 0xCD


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
                pages = max(1, -(-buf.nbytes // PAGE)) * PAGE
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
        self._fill(inputs)

    def holds(self, plans: list[ResolvedPlan], inputs: list[dict[str, np.ndarray]]) -> bool:
        """Whether this memory already holds exactly these buffers and inputs, so that a run of
        another kernel on the same cases needs only `reset`: same buffers case by case, and inputs
        that are the very arrays copied in, read-only (so they cannot have changed since)."""
        return (len(plans) == len(self.plans)
                and all(a.buffers == b.buffers for a, b in zip(plans, self.plans))
                and all(_same_frozen_arrays(a, b) for a, b in zip(inputs, self.inputs)))

    def _fill(self, inputs: list[dict[str, np.ndarray]] | None) -> None:
        """Initialise outputs and scratch, and copy in the inputs unless `inputs` is None."""
        for case, plan in enumerate(self.plans):
            for buf in plan.buffers:
                if buf.role == "input" and inputs is None:
                    continue
                p = self.placements[case][buf.name]
                view = np.frombuffer(self.map, dtype=np.uint8, count=p.nbytes, offset=p.offset)
                if buf.role == "input":
                    view[:] = np.ascontiguousarray(inputs[case][buf.name]).view(np.uint8).reshape(-1)
                    continue
                view[:] = 0 if buf.init == "zero" else poison_byte(buf.dtype)
                # the bytes around the data, zero in a fresh memfd, which a kernel can write out
                # of bounds without faulting (the module docstring): zero again after a reset
                self.map[p.region[0]:p.offset] = bytes(p.offset - p.region[0])
                self.map[p.offset + p.nbytes:p.region[1]] = bytes(p.region[1] - p.offset - p.nbytes)

    def reset(self) -> None:
        """Outputs and scratch back to their initial contents, for another run of the same batch
        or another kernel on the same cases (inputs are read-only to the runner, so they need no
        copy). The zero bytes of a fresh memfd around each writable buffer's data, which a kernel
        can write out of bounds without faulting (see the module docstring), are restored too:
        after a reset the memory is byte for byte as freshly laid out and filled."""
        self._fill(None)

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
        return self.placements[case][name].offset

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)
