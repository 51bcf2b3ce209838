"""Resolve a parsed submission against one concrete run: buffers, launch shapes, argument bytes.

A `Submission` says how to launch in terms of names (`grid = ["ceil_div(n, 256)"]`,
`args = ["x", "out", "n"]`). `resolve_plan` binds those names to one problem instance (its input
arrays, output shapes, dims and scalars) and checks everything a GPU would refuse or silently
get wrong, so that both backends (CPU emulator and CuPy) receive the same, already valid plan:

- every buffer (input, output, scratch) with its dtype, shape, size and initial contents;
- every launch with a 3-d grid and block within CUDA limits and its dynamic shared memory, and
  with no more threads than `thread_budget` allows for the buffers' sizes (the largest legal
  grid costs seconds of emulation, not minutes per input);
- every argument bound to a buffer (pointer parameters, element type checked) or packed into
  the little-endian bytes of its value parameter.

Errors are `LaunchError`s naming the launch, the `args` entry, its value and what was expected.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .errors import LaunchError
from .expressions import Expr, did_you_mean
from .submission import MAX_DYNAMIC_SHARED_BYTES, Launch, Param, Submission, check_launch_limits

__all__ = ["ITEMSIZE", "MAX_DYNAMIC_SHARED_BYTES", "MAX_SCRATCH_BYTES", "OUTPUT_DTYPES",
           "thread_budget",
           "ArgBinding", "BufferSpec", "ResolvedLaunch", "ResolvedPlan", "resolve_plan"]

#: Bytes per element of every dtype a buffer may have.
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "uint64": 8,
            "int32": 4, "uint32": 4, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}
#: Dtypes an output may be declared with.
OUTPUT_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "int8",
                 "uint32", "bool")
#: Largest scratch buffer, in bytes: a bad `size` must fail here, not exhaust a worker's memory.
MAX_SCRATCH_BYTES = 1 << 32
#: Threads one launch may have, whatever the sizes: a few seconds of the emulator's time.
MIN_THREAD_BUDGET = 1 << 22
#: ... and per element of all buffers together: a block of up to 1024 threads per element (a row,
#: a bin) is a launch real kernels make; more is a grid chosen to burn the judge's time.
THREADS_PER_ELEMENT = 1024
#: ... and never more than this (tens of seconds of the emulator's time on a trivial kernel).
MAX_THREAD_BUDGET = 1 << 27


def thread_budget(elements: int) -> int:
    """Most threads one launch may have when all its buffers hold *elements* elements.

    >>> thread_budget(1000), thread_budget(1 << 16), thread_budget(1 << 24)
    (4194304, 67108864, 134217728)
    """
    return max(MIN_THREAD_BUDGET, min(THREADS_PER_ELEMENT * elements, MAX_THREAD_BUDGET))


# struct format of each value-parameter dtype (little-endian, standard sizes).
_PACK = {"int8": "<b", "uint8": "<B", "int16": "<h", "uint16": "<H", "int32": "<i", "uint32": "<I",
         "int64": "<q", "uint64": "<Q", "float32": "<f", "float64": "<d", "bool": "<?"}


@dataclass(frozen=True)
class BufferSpec:
    """One device buffer. *role* is "input", "output" or "scratch"; *init* says what it holds
    before the first launch: "data" (the input array), "poison" or "zero"."""

    name: str
    role: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    init: str


@dataclass(frozen=True)
class ArgBinding:
    """The value of one kernel parameter: a buffer (*kind* "buffer", *buffer* its name) or the
    little-endian bytes of a value (*kind* "value")."""

    param: Param
    kind: str
    buffer: str | None
    value: bytes


@dataclass(frozen=True)
class ResolvedLaunch:
    """One launch with concrete numbers; grid and block always have three dimensions."""

    index: int
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    args: tuple[ArgBinding, ...]


@dataclass(frozen=True)
class ResolvedPlan:
    """Buffers (inputs, then outputs, then scratch) and launches, in launch order."""

    buffers: tuple[BufferSpec, ...]
    launches: tuple[ResolvedLaunch, ...]

    def buffer_index(self, name: str) -> int:
        """Position of buffer *name* in `buffers`; KeyError when there is none."""
        for i, buffer in enumerate(self.buffers):
            if buffer.name == name:
                return i
        known = [b.name for b in self.buffers]
        raise KeyError(f"no buffer {name!r}{did_you_mean(name, known)}; buffers: {known}")


def resolve_plan(sub: Submission, inputs: Mapping[str, np.ndarray],
                 outputs: Mapping[str, tuple[tuple[int, ...], str]], dims: Mapping[str, int],
                 scalars: Mapping[str, float]) -> ResolvedPlan:
    """Bind *sub*'s launches to one run; raise LaunchError on anything a GPU would refuse.

    *inputs* are C-contiguous arrays, *outputs* map a name to `(shape, dtype)`, *dims* and
    *scalars* are the problem's. Expressions see the dims and the scalars with integral values.

    >>> from mutagym.runtime.submission import parse_submission
    >>> sub = parse_submission('''/* mutagym
    ... [[launch]]
    ... kernel = "scale"
    ... grid = ["ceil_div(n, 128)"]
    ... block = [128]
    ... args = ["x", "out", "n", "alpha"]
    ... */
    ... extern "C" __global__ void scale(const float* x, float* out, int n, float alpha) {}''')
    >>> plan = resolve_plan(sub, {"x": np.zeros(1000, np.float32)}, {"out": ((1000,), "float32")},
    ...                     {"n": 1000}, {"alpha": 0.5})
    >>> launch = plan.launches[0]
    >>> launch.grid, launch.block, [a.buffer or a.value.hex() for a in launch.args]
    ((8, 1, 1), (128, 1, 1), ['x', 'out', 'e8030000', '0000003f'])
    """
    dims = {name: _number(name, value, "dim") for name, value in dims.items()}
    scalars = {name: _number(name, value, "scalar") for name, value in scalars.items()}
    kinds = _name_kinds(sub, inputs, outputs, dims, scalars)
    env = {**dims, **{k: int(v) for k, v in scalars.items() if _is_integral(v)}}

    buffers = [_input_buffer(name, array) for name, array in inputs.items()]
    buffers += [_output_buffer(name, shape, dtype) for name, (shape, dtype) in outputs.items()]
    for s in sub.scratch:
        size = _evaluate(s.size, env, scalars)
        nbytes = size * ITEMSIZE[s.dtype]
        if not 0 <= nbytes <= MAX_SCRATCH_BYTES:
            raise LaunchError(f"size = {s.size.text!r} evaluates to {size} elements ({nbytes} "
                              f"bytes); a scratch buffer holds 0 to {MAX_SCRATCH_BYTES} bytes",
                              where=f"scratch {s.name!r}", line=s.line)
        buffers.append(BufferSpec(s.name, "scratch", s.dtype, (size,), nbytes, s.init))
    by_name = {b.name: b for b in buffers}

    launches = []
    budget = thread_budget(sum(b.nbytes // ITEMSIZE[b.dtype] for b in buffers))
    for launch in sub.launches:
        grid = [_evaluate(e, env, scalars) for e in launch.grid]
        block = [_evaluate(e, env, scalars) for e in launch.block]
        shared = _evaluate(launch.shared_bytes, env, scalars)
        check_launch_limits(launch, grid, block, shared)
        threads = math.prod(grid) * math.prod(block)
        if threads > budget:
            raise LaunchError(f"the launch has {threads:,} threads (grid {grid} x block {block}); "
                              f"for buffers of this size at most {budget:,} are run",
                              where=f"launch {launch.index} ({launch.kernel})", line=launch.line)
        signature = sub.kernels[launch.kernel]
        args = tuple(_bind(launch, i, param, kinds, by_name, dims, scalars)
                     for i, param in enumerate(signature.params))
        launches.append(ResolvedLaunch(launch.index, launch.kernel, _pad3(grid), _pad3(block),
                                       shared, args))
    return ResolvedPlan(tuple(buffers), tuple(launches))


def _number(name: str, value: object, kind: str) -> int | float:
    """A dim as a Python int, a scalar as a Python int or float."""
    numbers = (int, np.integer) if kind == "dim" else (int, float, np.integer, np.floating)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers):
        expected = "an integer" if kind == "dim" else "a number"
        raise LaunchError(f"{kind} {name!r} must be {expected}, got {value!r}",
                          where=f"{kind} {name!r}")
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


def _is_integral(value: int | float) -> bool:
    return isinstance(value, int) or value.is_integer()


def _name_kinds(sub: Submission, inputs: Mapping, outputs: Mapping, dims: Mapping,
                scalars: Mapping) -> dict[str, str]:
    """Map every name an `args` entry may use to its kind; refuse a name used twice."""
    kinds: dict[str, str] = {}
    for kind, names in (("input", inputs), ("output", outputs),
                        ("scratch buffer", [s.name for s in sub.scratch]), ("dim", dims),
                        ("scalar", scalars)):
        for name in names:
            if name in kinds:
                raise LaunchError(f"name {name!r} is both {_article(kinds[name])} and "
                                  f"{_article(kind)}; inputs, outputs, scratch buffers, dims and "
                                  "scalars need distinct names", where=f"name {name!r}")
            kinds[name] = kind
    return kinds


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _input_buffer(name: str, array: np.ndarray) -> BufferSpec:
    dtype = np.dtype(array.dtype).name
    if dtype not in ITEMSIZE:
        raise LaunchError(f"input {name!r} has dtype {dtype}; supported: {', '.join(ITEMSIZE)}",
                          where=f"input {name!r}")
    return BufferSpec(name, "input", dtype, tuple(array.shape), int(array.nbytes), "data")


def _output_buffer(name: str, shape: tuple[int, ...], dtype: str) -> BufferSpec:
    if dtype not in OUTPUT_DTYPES:
        raise LaunchError(f"output {name!r} has dtype {dtype!r}; supported: "
                          f"{', '.join(OUTPUT_DTYPES)}", where=f"output {name!r}")
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise LaunchError(f"output {name!r} has shape {shape!r}; expected non-negative integers",
                          where=f"output {name!r}")
    shape = tuple(int(n) for n in shape)
    return BufferSpec(name, "output", dtype, shape, math.prod(shape) * ITEMSIZE[dtype], "poison")


def _evaluate(expr: Expr, env: Mapping[str, int], scalars: Mapping[str, float]) -> int:
    """Evaluate *expr*, explaining a non-integral scalar better than "unknown name" would."""
    for name in sorted(expr.names):
        if name not in env and name in scalars:
            raise LaunchError(f"{expr.text!r} uses scalar {name!r} = {scalars[name]!r}, which is "
                              "not an integer", where=expr.where, line=expr.line)
    return expr.evaluate(env)


def _pad3(values: list[int]) -> tuple[int, int, int]:
    return tuple(values + [1] * (3 - len(values)))


def _bind(launch: Launch, position: int, param: Param, kinds: Mapping[str, str],
          buffers: Mapping[str, BufferSpec], dims: Mapping[str, int],
          scalars: Mapping[str, float]) -> ArgBinding:
    """Bind `args[position]` of *launch* to *param*."""
    name = launch.args[position]
    arg = f"arg {name!r} of launch {launch.index}"
    param_text = f"parameter {param.name!r} of kernel {launch.kernel!r}"

    def fail(message: str) -> LaunchError:
        return LaunchError(message, where=f"args[{position}]", line=launch.line)

    kind = kinds.get(name)
    if kind is None:
        known = "; ".join(f"{k}s: {', '.join(repr(n) for n, v in kinds.items() if v == k)}"
                          for k in dict.fromkeys(kinds.values()))
        raise fail(f"{arg} names no input, output, scratch buffer, dim or scalar"
                   f"{did_you_mean(name, kinds)}; known {known or 'names: none'}")
    if name in buffers:
        buffer = buffers[name]
        if not param.pointer:
            raise fail(f"{arg} is buffer {name!r} ({buffer.dtype}) but {param_text} is a value "
                       f"{param.ctype}")
        if buffer.dtype != param.dtype:
            lanes = f" x{param.vector_width}" if param.vector_width > 1 else ""
            raise fail(f"{arg} is buffer {name!r} ({buffer.dtype}) but {param_text} is "
                       f"{'const ' if param.const else ''}{param.ctype}* ({param.dtype}{lanes})")
        return ArgBinding(param, "buffer", name, b"")

    value = dims[name] if kind == "dim" else scalars[name]
    if param.pointer:
        raise fail(f"{arg} is {kind} {name!r} = {value!r} but {param_text} is a pointer "
                   f"{param.ctype}*; pointers take inputs, outputs or scratch buffers")
    if param.dtype not in _PACK or param.vector_width > 1:
        raise fail(f"{param_text} is a value of type {param.ctype}, which mutagym cannot pass; "
                   "take a float, double or integer and convert in the kernel")
    try:
        packed = _pack(value, param.dtype)
    except ValueError as err:
        raise fail(f"{arg} is {kind} {name!r} = {value!r} but {param_text} is {param.ctype}: "
                   f"{err}") from None
    return ArgBinding(param, "value", None, packed)


def _pack(value: int | float, dtype: str) -> bytes:
    """Little-endian bytes of *value* as *dtype*; ValueError when that would change the value
    (a fraction or an out-of-range number for an integer type, overflow for a float type)."""
    fmt = _PACK[dtype]
    if dtype in ("float32", "float64"):
        try:
            return struct.pack(fmt, float(value))
        except OverflowError:
            raise ValueError(f"{value!r} is out of range for {dtype}") from None
    if not _is_integral(value):
        raise ValueError(f"{value!r} is not an integer")
    if dtype == "bool":
        low, high = 0, 1
    else:
        bits = 8 * struct.calcsize(fmt)
        signed = fmt[1].islower()  # struct spells signed integer codes in lower case
        low = -(1 << bits - 1) if signed else 0
        high = (1 << bits - 1) - 1 if signed else (1 << bits) - 1
    if not low <= int(value) <= high:
        raise ValueError(f"{value!r} is out of range ({low} to {high})")
    return struct.pack(fmt, int(value))
