"""Shape classes: per-problem distributions over a problem's dims, drawn deterministically.

Four fixed presets per problem let a kernel be wrong everywhere else and still earn full reward
(issue 14): wrong for n % 4 == 2, past one block, past 1024 columns, past a grid capped at 65,535
blocks without a stride loop, past a fixed loop cap, at n >= 2**20. A shape class names a region
of a problem's dims; `draw_dims(problem, cls, seed)` picks one instance of it, the same for the
same arguments, and an input id names it as the preset `@<class>` (`relu:normal:@mod4_2:17`; see
`rewards.generators.generate`). `classify` says which classes a dims instance falls in.

Classes act on the problem's *main* dim (`main_dim`: its reduction dim, else the last dim of its
first input) and, where it makes sense, on the others. "Rows" are what a row-parallel kernel
launches blocks over (`cost`). Free dims are drawn log-uniformly within the budget, their rows
capped at `FREE_ROWS` so that the classes aimed at the main dim stay cheap:

| class | main dim | other dims |
| --- | --- | --- |
| `odd` | odd | odd where the range allows, free |
| `mod4_1` .. `mod4_3` | n % 4 == r (vector loads of 4: the n % 4 == 2 tail) | free; every input's contiguous (last) dim gets the same residue where its range allows |
| `mod8_1` .. `mod8_7` | n % 8 == r | as mod4 |
| `mod32` | n % 32 == r for a drawn r in 1..31 (a partial warp) | as mod4 |
| `past_32` .. `past_1024` | k * B + 1, k >= 1, for B in 32, 128, 256, 512, 1024 | free |
| `below_32` .. `below_1024` | k * B - 1, k >= 1 | free |
| `beyond_block` | 1025 .. 4096 (more than one block of 1024 threads) | free |
| `wide` | 4097 .. 65536 (more than 4 blocks: a fixed number of strips) | free |
| `long_loop` | as long as the budget allows with the others at their minimum, >= 2**20 where it can (k for a matmul: a fixed loop cap) | minimum |
| `large` | the largest tensor at [1/2, 1] of the element budget, spread over the dims | drawn to fill it |
| `many_rows` | 1 .. 16 | rows >= 65,536: past gridDim.y / z and any grid capped at 65,535 blocks |
| `tiny` | 1 .. 3 | 1 .. 3 |
| `unit` | free or 1 | a non-empty set of dims at 1, the rest free |
| `all_ge2` | >= 2 | every dim >= 2 (groupnorm: several channels per group) |
| `any` | log-uniform over its range | log-uniform over the whole budget |

Each class's `description` is the line the task prompt gives it (`describe`, with the problem's
main dim named); a fixed preset's line is its dims.

Every draw stays inside each dim's [min, max] and the problem's `budget`: the largest tensor's
elements, the work (product of every dim, with the dims a kernel tiles rounded up to its tile) and
the rows. The budgets are measured on the CPU emulator (`benchmarks/bench_catalog_range.py`): the
slowest correct kernel of a problem runs any draw within about `CASE_SECONDS` here, so the gate
can use every class without a correct kernel timing out. A class the budget or the dims' ranges
cannot reach is not offered (`shape_classes`): `many_rows` is absent where even one correct
kernel takes longer than `CASE_SECONDS` at 65,536 rows.

>>> from mutagym.substrates.catalog import load_problem
>>> p = load_problem("softmax")
>>> dims = draw_dims(p, "mod4_2", 17)
>>> dims["cols"] % 4, dims == draw_dims(p, "mod4_2", 17)
(2, True)
>>> "mod4_2" in classify(p, dims) and within_budget(p, dims)
True
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..runtime.expressions import parse_expression
from ..substrates.catalog import Problem
from ..substrates.schema import expression_names

__all__ = ["BLOCK_SIZES", "Budget", "CASE_SECONDS", "COSTLY_CLASSES", "Cost", "DEFAULT_BUDGET",
           "ELEMENT_BUDGET", "FREE_ROWS", "LONG_LOOP", "MEASURED_BUDGETS", "ROW_LIMIT", "SHAPE_CLASSES",
           "REPRESENTATIVE_ELEMENTS", "SHAPE_SEEDS", "CORNER_ELEMENTS", "budget", "classify", "corners", "cost", "describe",
           "draw_dims",
           "log_uniform", "main_dim", "shape_classes", "toward", "within_budget"]

#: Rows a `many_rows` draw reaches: one past gridDim.y / z (65,535) and past any grid capped there.
ROW_LIMIT = 65536
#: Elements of a problem's largest tensor by default: 8 MiB of float32, what the emulator, numpy
#: and the fp64 reference handle in well under a second; `large` reaches it.
ELEMENT_BUDGET = 1 << 21
#: Where `long_loop` starts when the budget allows it: kernels wrong from n >= 2**20 on passed.
LONG_LOOP = 1 << 20
#: Most rows in the classes aimed at the main dim (residues, block edges, widths): cheap draws.
FREE_ROWS = 1024
#: Elements a corner of the declared domain may hold in its largest tensor (`corners`): the
#: catalog's largest declared size, 2**24 for the elementwise problems. A corner is one input run
#: in a rotating window (one per evaluation), not a class every draw may land in.
CORNER_ELEMENTS = (1 << 24) + (1 << 21)
#: Block sizes whose edges (`past_B`, `below_B`) the classes probe.
BLOCK_SIZES = (32, 128, 256, 512, 1024)
#: The measurement target: the slowest correct kernel of a problem on its costliest draw takes
#: at most about this long here (2 shared cores, load average <= 3, the fastest of 3 runs), 2.5
#: times under the gate's 10 s run timeout. At load 4-5 the same draws took up to 5.2 s: a gate
#: on a machine that busy needs a run timeout of 15 s or more.
CASE_SECONDS = 4.0


@dataclass(frozen=True)
class Cost:
    """What a dims instance costs: the largest tensor's `elements`, the `work` (product of every
    dim, tiled dims rounded up to their tile) and the `rows` (blocks a row-parallel kernel
    launches: the largest data tensor's elements over its main-dim extent)."""

    elements: int
    work: int
    rows: int


@dataclass(frozen=True)
class Budget:
    """The most a problem's draw may cost (each field as in `Cost`), and the tiles its correct
    kernels launch over (`tiles`: dim -> threads), which `work` rounds those dims up to.
    `corner_elements` replaces `elements` for the corners of the declared domain (`corners`)."""

    elements: int = ELEMENT_BUDGET
    work: int = 1 << 27
    rows: int = ROW_LIMIT
    tiles: Mapping[str, int] = field(default_factory=dict)
    corner_elements: int = CORNER_ELEMENTS


#: The budget of a problem not in `MEASURED_BUDGETS`. Rows: one block per row at 65,536 rows is
#: the costliest draw of the row reductions and scans, 2-3.9 s here (cumsum's warp-shuffle variant
#: and mean_dim's Kahan variant slowest). Work: every matmul-like problem's slowest kernel at 2**27
#: (m x k x n) takes at most 1.6 s (matmul_transposed_a's f64 variant at 2048 x 64 x 1024).
DEFAULT_BUDGET = Budget()

#: Budgets measured with `benchmarks/bench_catalog_range.py` (and timing the costliest shapes the
#: budget admits) where the default is too much; each comment names the slowest kernel at the
#: shape that set the limit. A row budget under `ROW_LIMIT` takes `many_rows` away.
MEASURED_BUDGETS: dict[str, Budget] = {
    # one block of 128-256 threads per row with several barriers: 5-7 s at 65,536 rows (the
    # online variants, layernorm's two-pass one), 2-2.5 s at 32,768
    "softmax": Budget(rows=32768),
    "softmax_bf16": Budget(rows=32768),
    "log_softmax": Budget(rows=32768),
    "layernorm": Budget(rows=32768),
    # one 128-thread block per (batch, channel) plane: variant_welford 16 s at 262,144 planes
    "instancenorm": Budget(rows=32768),
    # 16 x 16 tiles, each output walks all of n: variant_kahan 4.2 s at n = 1024, 1.6 s at 627
    "matmul": Budget(elements=1 << 19),
    # the same 16 x 16 tiles, staged through asynchronous copies: the substrate 7.4 s at n = 1023
    # (below_1024), 1.0 s at 513; its single-buffered variant 2.5 s and 0.4 s
    "matmul_cp_async": Budget(elements=1 << 19),
    # one producer and eight consumer warps per 16 x 16 tile, a barrier per K step: the variant with
    # two producers 11.4 s at n = 1254 (large), 5.8 s at 1023 (below_1024), 1.8 s at 724 (load 5.6)
    "matmul_warp_specialized": Budget(elements=1 << 19),
    # one 128-thread tile per out_len strip of every (out_ch, batch), looping over in_ch * ksize:
    # the substrate 2.5 s at work 2**28 (out_len 1 costs a whole tile), 1.2 s at 2**27
    "conv1d": Budget(tiles={"out_len": 128}),
    # 16 x 16 tiles over (w, h) per (batch, out_ch), looping over in_ch * 9: 1.9 s at 2**26 with
    # h = w = 1 (60 s at 2**29)
    "conv2d": Budget(work=1 << 26, tiles={"w": 16, "h": 16}),
    "conv2d_scale_bias": Budget(work=1 << 26, tiles={"w": 16, "h": 16}),
    # the same tiles without the channel loop: 1.7 s at the most the element budget admits (2**25)
    "avgpool2d": Budget(tiles={"w": 16, "h": 16}),
    # 16 x 16 tiles over (out_features, batch) looping over in_features: 1.4 s at 2**23, 5 s at 2**25
    "gemm_sigmoid_sum": Budget(work=1 << 23),
}


def budget(problem: Problem) -> Budget:
    """The problem's measured budget (`MEASURED_BUDGETS`, else `DEFAULT_BUDGET`)."""
    return MEASURED_BUDGETS.get(problem.id, DEFAULT_BUDGET)


# ------------------------------------------------------------------------------------- costs
def main_dim(problem: Problem) -> str:
    """The dim the classes aim at: the reduction dim, else the last dim of the first input (the
    first dim its last shape entry names, for an expression such as `out_len + ksize - 1`).

    >>> from mutagym.substrates.catalog import load_problem
    >>> main_dim(load_problem("layernorm")), main_dim(load_problem("conv1d"))
    ('cols', 'out_len')
    """
    if problem.reduction_dim:
        return problem.reduction_dim
    last = problem.inputs[0].shape[-1]
    names = expression_names(last) if isinstance(last, str) else set()
    return next((d for d in problem.dims if d in names), list(problem.dims)[-1])


#: Roles whose tensors are parameters, not data: they are not what a kernel launches rows over.
_PARAMETER_ROLES = ("weight_matrix", "bias", "affine_scale", "affine_shift", "running_mean",
                    "running_var")


@functools.lru_cache(maxsize=512)
def _tensors(problem: Problem) -> tuple[tuple[tuple, bool, int | None], ...]:
    """Per input and output: its shape entries (a dim name, or a parsed expression), whether it
    holds data (counts for rows) and the index of its entry along the main dim (or None)."""
    main = main_dim(problem)
    out = []
    for t in (*problem.inputs, *problem.outputs):
        entries = tuple(e if isinstance(e, int) or e in problem.dims else
                        parse_expression(e, where=f"{t.name}.shape") for e in t.shape)
        along = [i for i, e in enumerate(t.shape) if isinstance(e, str) and main in expression_names(e)]
        out.append((entries, getattr(t, "role", "") not in _PARAMETER_ROLES, along[0] if along else None))
    return tuple(out)


def cost(problem: Problem, dims: Mapping[str, int]) -> Cost:
    """The `Cost` of `dims` for `problem`.

    >>> from mutagym.substrates.catalog import load_problem
    >>> cost(load_problem("matmul_rect"), {"m": 4, "k": 1000, "n": 6})
    Cost(elements=6000, work=24000, rows=24)
    """
    tiles = budget(problem).tiles
    elements, rows = 1, 1
    for entries, data, along in _tensors(problem):
        extents = [e if isinstance(e, int) else dims[e] if isinstance(e, str) else e.evaluate(dims)
                   for e in entries]
        size = math.prod(extents)
        elements = max(elements, size)
        if data:
            rows = max(rows, size // extents[along] if along is not None and extents[along] else size)
    work = math.prod(-(-dims[d] // tiles[d]) * tiles[d] if d in tiles else dims[d] for d in problem.dims)
    return Cost(elements, work, rows)


def within_budget(problem: Problem, dims: Mapping[str, int]) -> bool:
    """True when every dim is inside its [min, max] and `cost` is inside `budget`."""
    if any(not d.min <= dims[name] <= d.max for name, d in problem.dims.items()):
        return False
    c, b = cost(problem, dims), budget(problem)
    return c.elements <= b.elements and c.work <= b.work and c.rows <= b.rows


def _largest(problem: Problem, dims: dict, name: str, lo: int, hi: int,
             fits: Callable[[dict], bool] | None = None) -> int | None:
    """The largest size in [lo, hi] of dim `name` that keeps `dims` within budget (and `fits`);
    None when even `lo` does not (costs grow with every dim, so a bisection finds it)."""
    ok = (lambda d: within_budget(problem, d) and (fits is None or fits(d)))
    if lo > hi or not ok({**dims, name: lo}):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok({**dims, name: mid}) else (lo, mid - 1)
    return lo


def toward(problem: Problem, dims: Mapping[str, int], name: str, size: int, max_elements: int) -> dict | None:
    """`dims` with dim `name` as close to `size` as the problem's budget and `max_elements` (in
    its largest tensor) allow: unchanged others if they fit, else the others at their minimum and
    `name` as large as fits up to `size`; None when even that does not fit.

    >>> from mutagym.substrates.catalog import load_problem
    >>> toward(load_problem("softmax"), {"rows": 64, "cols": 1024}, "cols", 1 << 20, 1 << 16)
    {'rows': 1, 'cols': 65536}
    """
    fits = (lambda d: cost(problem, d).elements <= max_elements)
    moved = {**dims, name: size}
    if within_budget(problem, moved) and fits(moved):
        return moved
    floors = _floors(problem)
    d = problem.dims[name]
    best = _largest(problem, floors, name, d.min, min(max(size, d.min), d.max), fits)
    return None if best is None else {**floors, name: best}


def corners(problem: Problem) -> dict[str, dict[str, int]]:
    """The corners of the declared domain: `min` (every dim at its least size), `<dim>_max`
    (that dim at its declared maximum, the others at their least), each within the budget's work
    and rows and `corner_elements` (a dim whose maximum does not fit gets the largest size that
    does), and `elements_past_2**24` where the declared ranges allow a tensor of more than 2**24
    elements (where float32 stops holding every integer index). benchmarks/bench_corners.py
    measures what the correct kernels take there.

    >>> from mutagym.substrates.catalog import load_problem
    >>> corners(load_problem("softmax"))["cols_max"], corners(load_problem("softmax"))["elements_past_2**24"]
    ({'rows': 1, 'cols': 1048576}, {'rows': 17, 'cols': 986896})
    """
    b = budget(problem)
    floors = _floors(problem)

    def fits(d: dict) -> bool:
        c = cost(problem, d)
        return c.elements <= b.corner_elements and c.work <= b.work and c.rows <= b.rows

    out = {"min": floors}
    for name, d in problem.dims.items():
        lo, hi = floors[name], d.max
        if not fits({**floors, name: lo}):
            continue
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits({**floors, name: mid}) else (lo, mid - 1)
        if lo != floors[name]:
            out[f"{name}_max"] = {**floors, name: lo}
    past = _past_exact_integers(problem, floors)
    if past is not None and past not in out.values():
        out["elements_past_2**24"] = past
    return out


#: Where float32 stops holding every integer: an index or a count kept in a float is wrong past it.
EXACT_FLOAT_INTEGERS = 1 << 24


def _past_exact_integers(problem: Problem, floors: dict[str, int]) -> dict[str, int] | None:
    """Dims whose largest tensor holds just more than 2**24 elements (the main dim at its
    maximum, the others grown in order to the least size that gets there), within the declared
    ranges and the budget's work and rows; None where the ranges stop short of it."""
    b = budget(problem)
    main = main_dim(problem)
    order = [main, *(n for n in problem.dims if n != main)]

    def past(d: dict) -> bool:
        return cost(problem, d).elements > EXACT_FLOAT_INTEGERS

    def least(d: dict, name: str) -> int:
        """The least size of `name` in [its floor, d[name]] that keeps `d` past 2**24."""
        lo, hi = floors[name], d[name]
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if past({**d, name: mid}) else (mid + 1, hi)
        return lo

    dims = dict(floors)
    for name in order:               # grow dims in order until the tensor is past 2**24 ...
        dims[name] = problem.dims[name].max
        if past(dims):
            dims[name] = least(dims, name)
            break
    for name in reversed(order):     # ... then lower the ones grown first as far as it stays past
        dims[name] = least(dims, name)
    c = cost(problem, dims)
    fits = c.elements <= b.corner_elements and c.work <= max(b.work, c.elements) and c.rows <= b.rows
    return dims if past(dims) and fits else None


def log_uniform(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An integer in [lo, hi], log-uniformly (small and large sizes alike)."""
    if lo >= hi:
        return lo
    return int(min(hi, max(lo, round(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)) - 0.5)))))


def _pick(rng: np.random.Generator, lo: int, hi: int, step: int = 1, offset: int = 0) -> int | None:
    """A size v in [lo, hi] with v % step == offset, log-uniformly; None if there is none."""
    first = lo + (offset - lo) % step
    if first > hi:
        return None
    count = (hi - first) // step + 1
    return first + step * (log_uniform(rng, 1, count) - 1) if count > 1 else first


# ------------------------------------------------------------------------------------- classes
@dataclass(frozen=True)
class _Progression:
    """Main-dim sizes v in [low, high] with v % step == offset (high None: the dim's max)."""

    step: int = 1
    offset: int = 0
    low: int = 1
    high: int | None = None


@dataclass(frozen=True)
class ShapeClass:
    """A named region of dims: how to draw one instance and how to recognise one, and what a
    policy reads of it in the task prompt (`description`, where `{main}` stands for the problem's
    `main_dim` and `{elements}` for its budget's elements; `describe` fills them in)."""

    name: str
    draw: Callable[[Problem, np.random.Generator], dict | None]
    member: Callable[[Problem, Mapping[str, int]], bool]
    description: str


def _floors(problem: Problem, floor: int = 1, odd: bool = False) -> dict[str, int]:
    """Each dim at its least size >= `floor` (odd when `odd` and its range has one)."""
    out = {}
    for name, d in problem.dims.items():
        v = min(d.max, max(d.min, floor))
        if odd and v % 2 == 0 and v + 1 <= d.max:
            v += 1
        out[name] = v
    return out


def _contiguous(problem: Problem) -> list[str]:
    """Dims other than the main one that are some input's last (contiguous) entry."""
    main = main_dim(problem)
    names = [t.shape[-1] for t in problem.inputs if isinstance(t.shape[-1], str)]
    return [n for n in problem.dims if n in names and n != main]


def _free(problem: Problem, rng: np.random.Generator, dims: dict, names: list[str], floors: dict,
          rows_cap: int | None, snap: _Progression | None = None, odd: bool = False) -> dict | None:
    """Draw `names` log-uniformly (in a random order) within the budget and, when `rows_cap` is
    set, rows <= rows_cap; `snap` puts a dim on a progression, `odd` makes it odd, where the range
    allows. None when the floors alone break the budget."""
    cap = None if rows_cap is None else max(rows_cap, cost(problem, floors).rows)
    fits = None if cap is None else (lambda d: cost(problem, d).rows <= cap)
    if not within_budget(problem, dims) or (fits is not None and not fits(dims)):
        return None
    for name in [names[i] for i in rng.permutation(len(names))]:
        hi = _largest(problem, dims, name, dims[name], problem.dims[name].max, fits)
        if hi is None:
            continue
        v = log_uniform(rng, dims[name], hi)
        if snap is not None and (s := _pick(rng, dims[name], hi, snap.step, snap.offset)) is not None:
            v = s
        elif odd and v % 2 == 0 and (v + 1 <= hi or v - 1 >= dims[name]):
            v = v + 1 if v + 1 <= hi else v - 1
        dims[name] = v
    return dims


def _main_class(name: str, description: str, ranges: Callable[[np.random.Generator], _Progression],
                on: Callable[[int], bool], residue: bool = False, odd: bool = False) -> ShapeClass:
    """A class that puts the main dim on a progression (`ranges` draws it; `on` recognises a size
    on it) and draws the other dims freely, rows capped at `FREE_ROWS`; `description` says what
    the main dim is, the rest of the line is added here."""
    def draw(problem, rng):
        main = main_dim(problem)
        prog = ranges(rng)
        floors = _floors(problem, odd=odd)
        d = problem.dims[main]
        lo = max(d.min, prog.low)
        hi = _largest(problem, dict(floors), main, lo, min(d.max, prog.high or d.max))
        v = None if hi is None else _pick(rng, lo, hi, prog.step, prog.offset)
        if v is None:
            return None
        snapped = _contiguous(problem) if residue else []
        others = [n for n in problem.dims if n != main and n not in snapped]
        dims = _free(problem, rng, {**floors, main: v}, others, floors, FREE_ROWS, odd=odd)
        return dims and _free(problem, rng, dims, snapped, floors, FREE_ROWS, snap=prog)

    others = ("other last dims too where they can be"
              if residue else "other dims odd where they can be" if odd else "other dims drawn")
    return ShapeClass(name, draw, lambda problem, dims: on(dims[main_dim(problem)]),
                      f"{description}; {others} (at most {FREE_ROWS:,} rows)")


def _long_low(problem: Problem) -> int | None:
    """Where `long_loop` starts: 2**20 when the budget reaches it with the other dims at their
    minimum, else half the longest main dim it reaches (None: not even the minimum fits)."""
    main = main_dim(problem)
    floors = _floors(problem)
    hi = _largest(problem, dict(floors), main, floors[main], problem.dims[main].max)
    if hi is None:
        return None
    return LONG_LOOP if hi >= LONG_LOOP else max(floors[main], -(-hi // 2))


def _draw_long(problem, rng):
    main = main_dim(problem)
    floors = _floors(problem)
    lo = _long_low(problem)
    hi = _largest(problem, dict(floors), main, floors[main], problem.dims[main].max)
    return None if lo is None or hi is None else {**floors, main: log_uniform(rng, lo, hi)}


@functools.lru_cache(maxsize=512)
def _reach_dims(problem: Problem) -> tuple[tuple[str, int], ...]:
    """A greedy fill (each dim in spec order as large as the budget allows): its largest tensor
    is the most elements `large` aims at."""
    dims = _floors(problem)
    for name in problem.dims:
        dims[name] = _largest(problem, dims, name, dims[name], problem.dims[name].max) or dims[name]
    return tuple(dims.items())


def _element_reach(problem: Problem) -> int:
    return cost(problem, dict(_reach_dims(problem))).elements


def _draw_large(problem, rng):
    # aim at [3/4, 1] of the reach: the fill's rounding stays above the class's 1/2. Dims go in a
    # random order, each at [1/4, 1] of what is left, then a fill in the same order; the fill
    # alone (each dim as large as fits, in that order) if that fell short, else the greedy fill.
    reach = _element_reach(problem)
    target = log_uniform(rng, max(1, 3 * reach // 4), reach)
    fits = (lambda d: cost(problem, d).elements <= target)
    names = list(problem.dims)
    order = [names[i] for i in rng.permutation(len(names))]
    for spread in (True, False):
        dims = _floors(problem)
        for name in order:
            hi = _largest(problem, dims, name, dims[name], problem.dims[name].max, fits)
            if hi is not None:
                dims[name] = log_uniform(rng, max(dims[name], hi // 4), hi) if spread else hi
        for name in order:
            dims[name] = _largest(problem, dims, name, dims[name], problem.dims[name].max, fits) or dims[name]
        if 2 * cost(problem, dims).elements >= reach:
            return dims
    return dict(_reach_dims(problem))


def _draw_rows(problem, rng):
    main = main_dim(problem)
    floors = _floors(problem)
    others = [n for n in problem.dims if n != main]
    short = log_uniform(rng, floors[main], min(problem.dims[main].max, 16))
    # a random order and a short main dim first; the spec's order and the shortest one if that fails
    for order, length in (([others[i] for i in rng.permutation(len(others))], short), (others, floors[main])):
        trial = {**floors, main: length}
        for name in order:
            top = _largest(problem, trial, name, trial[name], problem.dims[name].max)
            if top is None:
                break
            need = _smallest_rows(problem, trial, name, trial[name], top)
            if need is not None:
                trial[name] = log_uniform(rng, need, min(top, 2 * need))
                return trial
            trial[name] = top
    return None


def _smallest_rows(problem: Problem, dims: dict, name: str, lo: int, hi: int) -> int | None:
    """The least size in [lo, hi] of `name` giving rows >= ROW_LIMIT, or None."""
    if cost(problem, {**dims, name: hi}).rows < ROW_LIMIT:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if cost(problem, {**dims, name: mid}).rows >= ROW_LIMIT else (mid + 1, hi)
    return lo


def _draw_tiny(problem, rng):
    if any(d.min > 3 for d in problem.dims.values()):
        return None
    return {n: int(rng.integers(d.min, min(d.max, 3) + 1)) for n, d in problem.dims.items()}


def _draw_unit(problem, rng):
    ones = [n for n, d in problem.dims.items() if d.min == 1]
    if not ones:
        return None
    chosen = [n for n in ones if rng.random() < 0.5] or [ones[int(rng.integers(len(ones)))]]
    floors = _floors(problem)
    main = main_dim(problem)
    rest = [n for n in problem.dims if n not in chosen and n != main]
    dims = dict(floors)
    if main not in chosen:
        hi = _largest(problem, dims, main, floors[main], problem.dims[main].max)
        dims[main] = log_uniform(rng, floors[main], hi) if hi else floors[main]
    return _free(problem, rng, dims, rest, floors, FREE_ROWS)


def _draw_ge2(problem, rng):
    if any(d.max < 2 for d in problem.dims.values()):
        return None
    floors = _floors(problem, floor=2)
    main = main_dim(problem)
    hi = _largest(problem, dict(floors), main, floors[main], problem.dims[main].max)
    if hi is None:
        return None
    dims = {**floors, main: log_uniform(rng, floors[main], hi)}
    return _free(problem, rng, dims, [n for n in problem.dims if n != main], floors, FREE_ROWS)


def _draw_any(problem, rng):
    floors = _floors(problem)
    return _free(problem, rng, dict(floors), list(problem.dims), floors, None)


def _classes() -> list[ShapeClass]:
    def on_progression(step: int, offset: int, low: int = 1, high: int | None = None):
        prog = _Progression(step, offset, low, high)
        return dict(ranges=lambda rng: prog, on=lambda v: v % step == offset and low <= v <= (high or v))

    out = [_main_class("odd", "{main} odd", odd=True, **on_progression(2, 1))]
    out += [_main_class(f"mod4_{r}", f"{{main}} % 4 == {r}", residue=True, **on_progression(4, r))
            for r in (1, 2, 3)]
    out += [_main_class(f"mod8_{r}", f"{{main}} % 8 == {r}", residue=True, **on_progression(8, r))
            for r in range(1, 8)]
    out.append(_main_class("mod32", "{main} % 32 == r for a drawn r in 1..31 (a partial warp)", residue=True,
                           on=lambda v: v % 32 != 0, ranges=lambda rng: _Progression(32, int(rng.integers(1, 32)))))
    out += [_main_class(f"past_{b}", f"{{main}} = k * {b} + 1 for some k >= 1 (one past a block of {b})",
                        **on_progression(b, 1, low=b + 1)) for b in BLOCK_SIZES]
    out += [_main_class(f"below_{b}", f"{{main}} = k * {b} - 1 for some k >= 1 (one short of a block of {b})",
                        **on_progression(b, b - 1, low=b - 1)) for b in BLOCK_SIZES]
    out.append(_main_class("beyond_block", "{main} in 1025..4096 (more than one block of 1024 threads)",
                           **on_progression(1, 0, 1025, 4096)))
    out.append(_main_class("wide", "{main} in 4097..65536 (more than four blocks of 1024)",
                           **on_progression(1, 0, 4097, 65536)))
    out += [ShapeClass("long_loop", _draw_long,
                       lambda p, d: (lo := _long_low(p)) is not None and d[main_dim(p)] >= lo,
                       f"{{main}} as long as the largest tensor's {{elements}} elements allow (at least {LONG_LOOP:,} "
                       "where they do), the other dims at their minimum"),
            ShapeClass("large", _draw_large, lambda p, d: 2 * cost(p, d).elements >= _element_reach(p),
                       "the largest tensor at half to all of its {elements} elements at most, spread over the dims"),
            ShapeClass("many_rows", _draw_rows, lambda p, d: cost(p, d).rows >= ROW_LIMIT,
                       f"{{main}} 1..16 and {ROW_LIMIT:,} rows or more (past a grid dimension of 65,535 "
                       "blocks)"),
            ShapeClass("tiny", _draw_tiny, lambda p, d: all(v <= 3 for v in d.values()), "every dim 1..3"),
            ShapeClass("unit", _draw_unit, lambda p, d: any(v == 1 for v in d.values()),
                       "one or more dims 1, the others drawn"),
            ShapeClass("all_ge2", _draw_ge2, lambda p, d: all(v >= 2 for v in d.values()),
                       "every dim 2 or more"),
            ShapeClass("any", _draw_any, lambda p, d: True,
                       "every dim drawn log-uniformly over its range (the largest tensor at most {elements} elements)")]
    return out


#: Every shape class, by name, in the module table's order.
SHAPE_CLASSES: dict[str, ShapeClass] = {c.name: c for c in _classes()}
#: Classes whose every instance is large (a long loop, 2**20 elements, 65,536 rows): the reward
#: gate draws them fresh; the pool of record (`envs.pool.coverage_inputs`) and the kill matrix
#: (`mutants.killmatrix`) keep the cheap classes (residues, block edges, tiny, unit, ...).
COSTLY_CLASSES = ("large", "long_loop", "many_rows", "any")
#: Seeds tried per cheap class where one instance stands for the class (the pool's coverage inputs,
#: the kill matrix): see `representative_seed`.
SHAPE_SEEDS = 16
#: Elements the largest tensor of a class's stand-in instance reaches where the class allows: a
#: mod-4 residue of n = 2 never enters a float4 loop, nor a block-edge size a second block.
REPRESENTATIVE_ELEMENTS = 4096


def representative_seed(problem: Problem, cls: str, seeds: range) -> int | None:
    """The seed among `seeds` whose instance of `cls` stands for the class: the cheapest (fewest
    elements, then least work) of those whose largest tensor has `REPRESENTATIVE_ELEMENTS` or
    more, else the largest; None when no draw lands in the class.

    >>> from mutagym.substrates.catalog import load_problem
    >>> p = load_problem("relu")
    >>> dims = draw_dims(p, "mod4_2", representative_seed(p, "mod4_2", range(16)))
    >>> dims["n"] % 4, dims["n"] >= REPRESENTATIVE_ELEMENTS
    (2, True)
    """
    costs = []
    for seed in seeds:
        try:
            c = cost(problem, draw_dims(problem, cls, seed))
        except ValueError:
            continue
        costs.append(((c.elements, c.work), seed))
    if not costs:
        return None
    enough = [c for c in costs if c[0][0] >= REPRESENTATIVE_ELEMENTS]
    return min(enough)[1] if enough else max(costs)[1]


def _rng(problem: Problem, cls: str, seed: int, attempt: int) -> np.random.Generator:
    """A draw's generator: a stable seed from (problem, class, seed, attempt), free of Python's
    hash salt."""
    digest = hashlib.sha256(f"shape:{problem.id}:{cls}:{seed}:{attempt}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


#: Draws tried per seed before a seed counts as missing its class (each from its own generator).
_ATTEMPTS = 4


def _draw(problem: Problem, cls: str, seed: int) -> dict | None:
    """The first of `_ATTEMPTS` draws that lands in the class within the budget, or None."""
    for attempt in range(_ATTEMPTS):
        dims = SHAPE_CLASSES[cls].draw(problem, _rng(problem, cls, seed, attempt))
        if dims is not None and within_budget(problem, dims) and SHAPE_CLASSES[cls].member(problem, dims):
            return {n: int(dims[n]) for n in problem.dims}
    return None


@functools.lru_cache(maxsize=512)
def shape_classes(problem: Problem) -> tuple[str, ...]:
    """The classes `problem` offers: those whose draws land in the class within the budget (checked
    on the first seeds; a class the dims' ranges or the budget cannot reach is left out).

    >>> from mutagym.substrates.catalog import load_problem
    >>> [("many_rows" in shape_classes(load_problem(p))) for p in ("relu", "sum_dim")]
    [False, True]
    """
    return tuple(c for c in SHAPE_CLASSES if all(_draw(problem, c, s) is not None for s in range(4)))


def draw_dims(problem: Problem, cls: str, seed: int) -> dict[str, int]:
    """One instance of class `cls` for `problem`: the same dims for the same arguments, inside
    every dim's range and the budget, and a member of the class.

    Raises KeyError for a class the problem does not offer (naming those it does), ValueError in
    the rare case a seed's draw misses the class (never for the seeds `shape_classes` checked).
    """
    if cls not in SHAPE_CLASSES or cls not in shape_classes(problem):
        raise KeyError(f"problem {problem.id!r} has no shape class {cls!r} (classes: "
                       f"{', '.join(shape_classes(problem))})")
    dims = _draw(problem, cls, seed)
    if dims is None:
        raise ValueError(f"problem {problem.id!r}: seed {seed} of shape class {cls!r} misses the class")
    return dims


def describe(problem: Problem, shape: str) -> str:
    """What a policy reads of the shape `shape` of `problem`: a fixed preset's dims, or a class's
    (`@<class>`) `description` with the problem's main dim named.

    >>> from mutagym.substrates.catalog import load_problem
    >>> describe(load_problem("softmax"), "remainder")
    'rows = 37, cols = 1000'
    >>> describe(load_problem("softmax"), "@mod4_2").split(";")[0]
    'cols % 4 == 2'
    """
    if shape.startswith("@"):
        return SHAPE_CLASSES[shape[1:]].description.format(main=main_dim(problem),
                                                           elements=f"{budget(problem).elements:,}")
    return ", ".join(f"{d} = {v}" for d, v in problem.preset(shape).items())


def classify(problem: Problem, dims: Mapping[str, int]) -> list[str]:
    """The classes (of those `problem` offers) that `dims` falls in, in table order.

    >>> from mutagym.substrates.catalog import load_problem
    >>> classify(load_problem("relu"), {"n": 1030})
    ['mod4_2', 'mod8_6', 'mod32', 'beyond_block', 'all_ge2', 'any']
    """
    return [c for c in shape_classes(problem) if SHAPE_CLASSES[c].member(problem, dims)]
