"""Resolve a parsed submission against one concrete run: buffers, launch shapes, argument bytes.

A `Submission` says how to launch in terms of names (`grid = ["ceil_div(n, 256)"]`,
`args = ["x", "out", "n"]`). `resolve_plan` binds those names to one problem instance (its input
arrays, output shapes, dims and scalars) and checks everything a GPU would refuse or silently
get wrong, so that both backends (CPU emulator and CuPy) receive the same, already valid plan:

- every buffer (input, output, scratch) with its dtype, shape, size and initial contents (an
  `inout` output starts as a copy of its input, a `fill`ed buffer holds its value);
- every launch with a 3-d grid and block within CUDA limits and its dynamic shared memory, and
  with no more threads than `thread_budget` allows for the buffers' sizes (the largest legal
  grid costs seconds of emulation, not minutes per input);
- every argument bound to a pointer into a buffer (pointer parameters, element type checked;
  `x + 4` points four elements in, within the buffer) or packed into the little-endian bytes of
  its value parameter (a name, an integer or real expression, or NULL's eight zero bytes);
- every `__constant__` binding with the input whose bytes it receives.

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
           "scratch_budget", "thread_budget",
           "ArgBinding", "BufferSpec", "ConstantCopy", "ResolvedLaunch", "ResolvedPlan", "resolve_plan"]

#: Bytes per element of every dtype a buffer may have.
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "uint64": 8,
            "int32": 4, "uint32": 4, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}
#: Dtypes an output may be declared with.
OUTPUT_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "int8",
                 "uint32", "bool")
#: Largest scratch buffer, in bytes: a bad `size` must fail here, not exhaust a worker's memory.
MAX_SCRATCH_BYTES = 1 << 32
#: Scratch of one case, all its buffers together, whatever the sizes: what a few partial sums per
#: block need at any size (a judge lays out, poisons and keeps a copy of every byte of it, per case).
MIN_SCRATCH_BUDGET = 64 << 20
#: ... and per byte of the case's inputs and outputs: the catalog's split-K workspaces take 1.3x at
#: most (eight partial products of the output); more is memory asked for to exhaust the judge.
SCRATCH_PER_DATA_BYTE = 8
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


def scratch_budget(data_bytes: int) -> int:
    """Most bytes of scratch, all buffers together, a case may have when its inputs and outputs
    take *data_bytes*.

    >>> scratch_budget(4000), scratch_budget(64 << 20) >> 20
    (67108864, 512)
    """
    return max(MIN_SCRATCH_BUDGET, SCRATCH_PER_DATA_BYTE * data_bytes)


_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
# struct format of each value-parameter dtype (little-endian, standard sizes).
_PACK = {"int8": "<b", "uint8": "<B", "int16": "<h", "uint16": "<H", "int32": "<i", "uint32": "<I",
         "int64": "<q", "uint64": "<Q", "float32": "<f", "float64": "<d", "bool": "<?"}


@dataclass(frozen=True)
class BufferSpec:
    """One device buffer. *role* is "input", "output" or "scratch"; *init* says what it holds
    before the first launch: "data" (the input array), "poison", "zero", "copy" (the data of
    input *source*: an `inout` output) or "fill" (every element the bytes *fill*)."""

    name: str
    role: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    init: str
    source: str | None = None
    fill: bytes = b""


@dataclass(frozen=True)
class ArgBinding:
    """The value of one kernel parameter: a pointer into a buffer (*kind* "buffer") or the
    little-endian bytes of a value (*kind* "value"; a null pointer is eight zero bytes).

    *buffer* is the buffer's name, followed by `+BYTES` for a pointer past its start (an
    `x + 4` argument): `base` and `byte_offset` split it."""

    param: Param
    kind: str
    buffer: str | None
    value: bytes

    @property
    def base(self) -> str:
        """The buffer the pointer points into."""
        return self.buffer.partition("+")[0]

    @property
    def byte_offset(self) -> int:
        """Bytes from the buffer's first element to where the pointer points."""
        return int(self.buffer.partition("+")[2] or 0)


@dataclass(frozen=True)
class ConstantCopy:
    """Before a case's first launch, the `__constant__` array *symbol* receives the *nbytes*
    bytes of input *input* (at its start)."""

    symbol: str
    input: str
    nbytes: int


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
    constants: tuple[ConstantCopy, ...] = ()

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
    _check_scratch_budget(sub, buffers)
    by_name = {b.name: b for b in buffers}
    aliases = _in_place(sub, by_name)
    for launch in sub.launches:
        for fill in launch.fills:
            by_name[fill.buffer] = _filled(fill, by_name, env, scalars)
    buffers = [by_name[b.name] for b in buffers]
    constants = tuple(_constant(c, by_name, kinds) for c in sub.constants)
    targets = {**by_name, **{name: by_name[output] for name, output in aliases.items()}}

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
        args = tuple(_bind(launch, i, param, kinds, targets, env, dims, scalars)
                     for i, param in enumerate(signature.params))
        launches.append(ResolvedLaunch(launch.index, launch.kernel, _pad3(grid), _pad3(block),
                                       shared, args))
    return ResolvedPlan(tuple(buffers), tuple(launches), constants)


def _check_scratch_budget(sub: Submission, buffers: list[BufferSpec]) -> None:
    """LaunchError when the scratch buffers together exceed `scratch_budget` of the case's data."""
    data = sum(b.nbytes for b in buffers if b.role != "scratch")
    scratch = {b.name: b.nbytes for b in buffers if b.role == "scratch"}
    budget = scratch_budget(data)
    if sum(scratch.values()) > budget:
        sizes = ", ".join(f"{name!r} {n:,}" for name, n in scratch.items())
        raise LaunchError(f"the scratch buffers take {sum(scratch.values()):,} bytes together ({sizes}); the "
                          f"scratch budget of a case whose inputs and outputs take {data:,} bytes is {budget:,} "
                          f"bytes (the larger of {MIN_SCRATCH_BUDGET >> 20} MiB and {SCRATCH_PER_DATA_BYTE}x "
                          "the inputs and outputs)", where="scratch", line=sub.scratch[0].line)


def _in_place(sub: Submission, buffers: dict[str, BufferSpec]) -> dict[str, str]:
    """Make each `inout` output a copy of its input (in *buffers*); return input -> output, the
    name the launches' arguments use for the output."""
    aliases = {}
    for pair in sub.inout:
        where = f"inout {pair.input!r}"
        source = buffers.get(pair.input)
        if source is None or source.role != "input":
            known = [b.name for b in buffers.values() if b.role == "input"]
            raise LaunchError(f"inout names {pair.input!r}, which is not an input"
                              f"{did_you_mean(pair.input, known)}; inputs: {known}", where=where,
                              line=pair.line)
        outputs = [b for b in buffers.values() if b.role == "output"]
        if pair.output is not None:
            chosen = [b for b in outputs if b.name == pair.output]
            if not chosen:
                raise LaunchError(f"inout maps {pair.output!r}, which is not an output"
                                  f"{did_you_mean(pair.output, [b.name for b in outputs])}; "
                                  f"outputs: {[b.name for b in outputs]}", where=where,
                                  line=pair.line)
        else:
            chosen = [b for b in outputs if (b.shape, b.dtype) == (source.shape, source.dtype)]
            if len(chosen) != 1:
                raise LaunchError(f"inout {pair.input!r} ({source.dtype}, shape {source.shape}) "
                                  f"needs exactly one output of its shape and dtype, found "
                                  f"{[b.name for b in chosen] or 'none'}; name it: inout = "
                                  f'{{out = "{pair.input}"}}', where=where, line=pair.line)
        output = chosen[0]
        if (output.shape, output.dtype) != (source.shape, source.dtype) or output.name in aliases.values():
            raise LaunchError(f"inout: output {output.name!r} ({output.dtype}, shape {output.shape}) "
                              f"cannot start as a copy of input {pair.input!r} ({source.dtype}, "
                              f"shape {source.shape}): the problem does not allow updating it in "
                              "place", where=where, line=pair.line)
        buffers[output.name] = BufferSpec(output.name, "output", output.dtype, output.shape,
                                          output.nbytes, "copy", source=pair.input)
        aliases[pair.input] = output.name
    return aliases


def _filled(fill, buffers: Mapping[str, BufferSpec], env: Mapping[str, int],
            scalars: Mapping[str, float]) -> BufferSpec:
    """The buffer of a launch's `fill`, starting with every element the fill's value."""
    where = f"launch {fill.launch} fill {fill.buffer}"
    buffer = buffers.get(fill.buffer)
    if buffer is None or buffer.role == "input":
        known = [b.name for b in buffers.values() if b.role != "input"]
        raise LaunchError(f"fill names {fill.buffer!r}, which is not an output or a scratch "
                          f"buffer{did_you_mean(fill.buffer, known)}; inputs are read-only; "
                          f"writable buffers: {known}", where=where, line=fill.line)
    if buffer.init == "copy":
        raise LaunchError(f"fill names {fill.buffer!r}, the inout output that starts as a copy of "
                          f"{buffer.source!r}; it cannot also start filled", where=where, line=fill.line)
    value = fill.value if fill.expr is None else _evaluate(fill.expr, env, scalars)
    try:
        pattern = _element_bytes(value, buffer.dtype)
    except ValueError as err:
        raise LaunchError(f"fill {fill.buffer} = {value!r} does not fit {buffer.dtype}: {err}",
                          where=where, line=fill.line) from None
    return BufferSpec(buffer.name, buffer.role, buffer.dtype, buffer.shape, buffer.nbytes, "fill",
                      fill=pattern)


def _element_bytes(value: int | float, dtype: str) -> bytes:
    """One element of *dtype* holding *value*; ValueError when *dtype* cannot hold it exactly
    (a float's rounding is allowed, an overflow to infinity is not)."""
    if dtype in ("float16", "bfloat16"):
        if dtype == "bfloat16":
            import ml_dtypes
            element = np.array(value, dtype=ml_dtypes.bfloat16)
        else:
            with np.errstate(over="ignore"):   # an overflow is the ValueError below
                element = np.array(value, dtype=np.float16)
        if np.isinf(element) and not math.isinf(value):
            raise ValueError(f"{value!r} is out of range for {dtype}")
        return element.tobytes()
    if dtype in ("float32", "float64") and math.isfinite(value):
        packed = _pack(value, dtype)
        if math.isinf(struct.unpack(_PACK[dtype], packed)[0]):
            raise ValueError(f"{value!r} is out of range for {dtype}")
        return packed
    return _pack(value, dtype)


def _constant(binding, buffers: Mapping[str, BufferSpec], kinds: Mapping[str, str]) -> ConstantCopy:
    """A `constant` binding resolved: the input it copies and how many bytes."""
    buffer = buffers.get(binding.input)
    if buffer is None or kinds.get(binding.input) != "input":
        known = [name for name, kind in kinds.items() if kind == "input"]
        raise LaunchError(f"constant {binding.symbol!r} = {binding.input!r}: not an input"
                          f"{did_you_mean(binding.input, known)}; inputs: {known}",
                          where=f"constant {binding.symbol!r}", line=binding.line)
    return ConstantCopy(binding.symbol, binding.input, buffer.nbytes)


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
          buffers: Mapping[str, BufferSpec], env: Mapping[str, int], dims: Mapping[str, int],
          scalars: Mapping[str, float]) -> ArgBinding:
    """Bind `args[position]` of *launch* to *param*. *buffers* maps every name an argument may
    use for a buffer to it (an `inout` input's name to its output)."""
    argument = launch.arguments[position]
    name = argument.name
    arg = f"arg {argument.text!r} of launch {launch.index}"
    param_text = f"parameter {param.name!r} of kernel {launch.kernel!r}"

    def fail(message: str) -> LaunchError:
        return LaunchError(message, where=f"args[{position}]", line=launch.line)

    if argument.kind == "null":
        if not param.pointer:
            raise fail(f"{arg} is a null pointer but {param_text} is a value {param.ctype}")
        return ArgBinding(param, "value", None, bytes(8))
    if argument.kind in ("name", "offset") and name not in kinds:
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
        if argument.kind == "name":
            return ArgBinding(param, "buffer", buffer.name, b"")
        elements = _evaluate(argument.offset, env, scalars)
        count = buffer.nbytes // ITEMSIZE[buffer.dtype]
        if not 0 <= elements <= count:
            raise fail(f"{arg}: offset {argument.offset.text!r} = {elements} elements is outside "
                       f"buffer {name!r} (0 to {count} elements)")
        offset = elements * ITEMSIZE[buffer.dtype]
        return ArgBinding(param, "buffer", f"{buffer.name}+{offset}" if offset else buffer.name, b"")

    if argument.kind == "name":
        kind = kinds[name]
        value = dims[name] if kind == "dim" else scalars[name]
        what = f"{kind} {name!r} = {value!r}"
    else:
        expr = argument.real if param.dtype in _FLOAT_DTYPES else argument.expr
        named = sorted(n for n in (expr or argument.real).names if n in buffers)
        if named:
            raise fail(f"{arg} uses buffer {named[0]!r} in an expression; a pointer argument is "
                       "'buffer' or 'buffer + elements'")
        if expr is None:
            raise fail(f"{arg} is a real expression but {param_text} is {param.ctype}; an integer "
                       "parameter takes an integer expression ('//' divides)")
        value = expr.evaluate({**dims, **scalars}) if expr.real else _evaluate(expr, env, scalars)
        what = f"{expr.text!r} = {value!r}"
    if param.pointer:
        raise fail(f"{arg} is {what} but {param_text} is a pointer {param.ctype}*; pointers take "
                   "inputs, outputs, scratch buffers, 'buffer + elements' or NULL")
    if param.vector_width > 1:
        raise fail(f"{param_text} is a value of type {param.ctype}, which mutagym cannot pass; "
                   "take its components as scalars and build it in the kernel")
    try:
        packed = _element_bytes(value, param.dtype)
    except ValueError as err:
        raise fail(f"{arg} is {what} but {param_text} is {param.ctype}: {err}") from None
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
