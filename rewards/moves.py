"""Input moves: named, deterministic transforms of a generated input, which a falsification search
composes to look for the input on which a given kernel is worst.

A move acts on the free float inputs (`generators.FREE_ROLES`: data, weights, biases), so every
constrained role keeps its meaning (probabilities, labels, masks, positive values); a move made
for a constrained role (`zero_mass_<k>`: probabilities at the simplex's edge) keeps its domain. A moved
input is named in its id: the generator field carries the moves after `~`, in the order applied
(`softmax:normal~scale_1e25~negate:official:3`), so `generate_from_id` rebuilds it and a
witness the search found is reproducible. Shapes move through the preset: `=cols=5,rows=1` names
explicit dims (any inside the problem's declared ranges; `generators.generate`).

| move | what it does to each free float input | aims at |
| --- | --- | --- |
| `scale_<s>` | times s, for s across the float32 exponent range (1e-30 .. 1e30, 2**25) | absorption, overflow, underflow, denormals, finite sentinels |
| `offset_<c>` | plus c (1e3, 1e7, -1e7) | cancellation, shifted statistics, log-sum-exp absorption |
| `negate`, `magnitude` | -x, abs(x) | sign-dependent branches, clamps |
| `band_<at>`, `band_-<at>` | each row mapped, in order, onto one sign within a factor 2 of a point of its dtype's range: `top` (max / 2: up to the largest finite value), `root` (sqrt(max)), `sub` (smallest normal / 16) | sentinels and clamps past a magnitude, all-negative rows, overflowing squares and sums, subnormals |
| `spike_first`, `spike_middle`, `spike_last` | one element of each row (last dim) set to 1e4 times the row's largest magnitude | first/last-element handling of reductions, shifted moments |
| `spike_1e8_first`, `spike_1e8_middle`, `spike_1e8_last` | the same at 1e8 times | absorption of a whole prefix or row by one element |
| `zero_mass_<k>` | the k-th probability input only (from 0): every fourth entry of each row (from a drawn place) exactly 0, the row renormalised | 0 log 0, entropies and divergences at the edge of the simplex |
| `signed_zeros` | every fourth element of each row (from a drawn place) zero, signs alternating from a drawn one | -0.0 against +0.0 in comparisons, keys and sign bits |
| `constant_rows` | every row its first value repeated | zero variance, ties, degenerate normalisers |
| `coarse` | values rounded to the nearest of 5 levels per row | ties, repeated values |
| `ninf_first`, `ninf_last`, `pinf_middle`, `nan_middle` | one element of each row infinite or NaN | special values, only where the problem's declared values hold them (a value family of the problem says so: masked logits' -inf) |

Whether a moved input may judge anything is the validity gate's question (every correct kernel
must pass it); a move that makes it meaningless for the problem (an infinity where the reference
is NaN) simply yields an invalid input. A special value the problem's declared values never hold
is not proposed at all (`moves_for`): the prompt promises finite inputs there, and a correct
compensated sum turns an infinity into NaN where the catalog's plain sums keep it.

>>> from mutagym.substrates.catalog import load_problem
>>> g = make_input(load_problem("relu"), "sign_mixed~scale_1e6~negate", "=n=5", 0)
>>> g.id, g.dims, bool((g.inputs["x"] == -make_input(load_problem("relu"), "sign_mixed~scale_1e6", "=n=5", 0).inputs["x"]).all())
('relu:sign_mixed~scale_1e6~negate:=n=5:0', {'n': 5}, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..runtime.buffers import numpy_dtype
from ..substrates.catalog import Problem, load_problem
from .generators import (FAMILIES, FREE_ROLES, GeneratedInput, _cast, _seed_for, families_for, generate, parse_input_id,
                         scale_inputs)

__all__ = ["MOVES", "Move", "generate_from_id", "make_input", "moves_by_text", "moves_for", "split_moves"]

_SCALES = ("1e-30", "1e-6", "1e3", "1e6", "3.4e7", "1e12", "1e20", "1e25", "1e30")
_OFFSETS = ("1e3", "1e7", "-1e7")
#: Where a `band` puts a row in its dtype's exponent range: the top octaves, where squares overflow, subnormals.
_BANDS = ("top", "root", "sub")
#: How far a spike stands above the row's largest magnitude (`spike_<position>`), and a far one.
SPIKE = 1e4
FAR_SPIKE = 1e8
#: Levels a `coarse` row is rounded to.
COARSE_LEVELS = 5


def _rows(a: np.ndarray) -> np.ndarray:
    """A float64 copy of `a` as rows along its last dim (a 1-d array is one row)."""
    return np.array(a, dtype=np.float64).reshape(-1, a.shape[-1])


def _at(position: str, cols: int) -> int:
    return {"first": 0, "middle": cols // 2, "last": cols - 1}[position]


def _spike(position: str, ratio: float):
    def move(rows: np.ndarray, rng, finfo) -> np.ndarray:
        top = np.max(np.abs(rows), axis=1)
        rows[:, _at(position, rows.shape[1])] = ratio * np.where(top > 0, top, 1.0) * rng.choice((-1.0, 1.0))
        return rows
    return move


def _band(where: str, sign: float):
    """Each row onto one sign at magnitudes m * 2**t, t in [-1, 1] (the row's order kept), m a
    point of the input dtype's exponent range: `top` half its largest finite value (the top two octaves), `root`
    the square root of that value (where a square overflows), `sub` a sixteenth of its smallest
    normal (subnormals)."""
    def move(rows: np.ndarray, rng, finfo) -> np.ndarray:
        magnitude = {"top": float(finfo.max) / 2, "root": float(finfo.max) ** 0.5,
                     "sub": float(finfo.smallest_normal) / 16}[where]
        finite = np.where(np.isfinite(rows), rows, 0.0)
        top = np.max(np.abs(finite), axis=1, keepdims=True)
        unit = sign * finite / np.where(top > 0, top, 1.0)
        return sign * magnitude * np.exp2(unit)
    return move


def _signed_zeros(rows: np.ndarray, rng, finfo) -> np.ndarray:
    cols = rows.shape[1]
    for r in range(rows.shape[0]):
        places = np.arange(int(rng.integers(min(cols, 4))), cols, 4)
        signs = np.where(np.arange(len(places)) % 2 == 0, 1.0, -1.0) * rng.choice((-1.0, 1.0))
        rows[r, places] = np.copysign(0.0, signs)
    return rows


def _special(value: float, position: str):
    def move(rows: np.ndarray, rng, finfo) -> np.ndarray:
        rows[:, _at(position, rows.shape[1])] = value
        return rows
    return move


def _zero_mass(rows: np.ndarray, rng, finfo) -> np.ndarray:
    """Probability rows with every fourth entry (from a drawn place) exactly 0, renormalised: the
    corner of the declared domain where 0 * log(0) must be 0 (x log y, entropies, KL)."""
    cols = rows.shape[1]
    for r in range(rows.shape[0]):
        places = np.arange(int(rng.integers(min(cols, 4))), cols, 4)
        if len(places) < cols:
            rows[r, places] = 0.0
    return rows / np.where(rows.sum(axis=1, keepdims=True) > 0, rows.sum(axis=1, keepdims=True), 1.0)


def _coarse(rows: np.ndarray, rng, finfo) -> np.ndarray:
    low, high = rows.min(axis=1, keepdims=True), rows.max(axis=1, keepdims=True)
    span = np.where(high > low, high - low, 1.0)
    return low + np.round((rows - low) / span * (COARSE_LEVELS - 1)) * span / (COARSE_LEVELS - 1)


#: A move's action: (a free input's rows in float64, its generator, the finfo of the input's dtype) -> rows.
RowMove = Callable[[np.ndarray, np.random.Generator, Any], np.ndarray]


@dataclass(frozen=True)
class Move:
    """A move: how it maps a free input's rows (float64) to new rows, what a policy reads of it in
    the prompt (`text`), the non-finite value it puts in (`non_finite`, spelled as the value
    families spell theirs: `-inf`, `+inf`, `NaN`), and whether it sets where the values sit
    (`regime`: magnitude and sign, as scales, offsets and bands do) rather than how a row is
    arranged (outliers, zeros, ties, special values), and the roles whose inputs it changes (the
    free float roles, or a constrained role whose declared domain it keeps), all of them or only
    the `nth` (a zero in one distribution of a divergence is its corner, in both an infinity)."""

    apply: RowMove
    text: str
    non_finite: str | None = None
    regime: bool = False
    roles: tuple[str, ...] = FREE_ROLES
    nth: int | None = None


def _scale(factor: float) -> Move:
    return Move(lambda rows, rng, finfo: rows * factor, "times the named factor", regime=True)


def _offset(shift: float) -> Move:
    return Move(lambda rows, rng, finfo: rows + shift, "plus the named number", regime=True)


#: Every move, by the name an input id carries.
MOVES: dict[str, Move] = {
    **{f"scale_{s}": _scale(float(s)) for s in _SCALES},
    **{f"offset_{c}": _offset(float(c)) for c in _OFFSETS},
    "negate": Move(lambda rows, rng, finfo: -rows, "negated", regime=True),
    "magnitude": Move(lambda rows, rng, finfo: np.abs(rows), "absolute values", regime=True),
    **{f"band_{sign}{where}": Move(_band(where, -1.0 if sign else 1.0),
                                   "each row one-signed within 2x of its dtype's max/2 (top), "
                                   "sqrt(max) (root), min normal/16 (sub); order kept", regime=True)
       for sign in ("", "-") for where in _BANDS},
    **{f"spike{ratio}_{p}": Move(_spike(p, SPIKE if not ratio else FAR_SPIKE),
                                 "that element of each row +-1e4 (spike_1e8_: 1e8) x the row's largest magnitude")
       for ratio in ("", "_1e8") for p in ("first", "middle", "last")},
    "signed_zeros": Move(_signed_zeros, "every 4th element of each row +0.0 or -0.0 in turn"),
    **{f"zero_mass_{k}": Move(_zero_mass, "only that probability input (0: the first): every 4th entry of a row 0, the row "
                                          "renormalised", roles=("probability",), nth=k) for k in range(2)},
    "constant_rows": Move(lambda rows, rng, finfo: np.repeat(rows[:, :1], rows.shape[1], axis=1),
                          "each row its first value repeated"),
    "coarse": Move(_coarse, f"each row rounded to {COARSE_LEVELS} levels"),
    **{name: Move(_special(value, position), "that element of each row -inf, +inf or NaN", spelled)
       for name, value, spelled, position in (("ninf_first", -np.inf, "-inf", "first"),
                                              ("ninf_last", -np.inf, "-inf", "last"),
                                              ("pinf_middle", np.inf, "+inf", "middle"),
                                              ("nan_middle", np.nan, "NaN", "middle"))},
}


def moves_for(problem: Problem) -> dict[str, Move]:
    """The moves a search may make on `problem`: every move that changes a role the problem has,
    but a special value only where one of the problem's value families (`generators.families_for`)
    declares that value.

    >>> from mutagym.substrates.catalog import load_problem
    >>> [m for m in moves_for(load_problem("softmax")) if MOVES[m].non_finite]
    ['ninf_first', 'ninf_last']
    >>> [m for m in moves_for(load_problem("matvec")) if MOVES[m].non_finite]
    []
    """
    declared = {v for family in families_for(problem) for v in FAMILIES[family].non_finite}
    roles = [t.role for t in problem.inputs]
    return {name: move for name, move in MOVES.items()
            if (move.non_finite is None or move.non_finite in declared)
            and sum(r in move.roles for r in roles) > (move.nth or 0)}


def moves_by_text(problem: Problem) -> dict[str, list[str]]:
    """What a policy reads of the moves a search may make on `problem`, each text once with the
    names it covers (table order)."""
    grouped: dict[str, list[str]] = {}
    for name, move in moves_for(problem).items():
        grouped.setdefault(move.text, []).append(name)
    return grouped


def split_moves(generator: str) -> tuple[str, list[str]]:
    """(base generator, moves) of a generator field `base~move~move`; a move not in `MOVES` is a
    ValueError naming it."""
    base, *moves = generator.split("~")
    unknown = [m for m in moves if m not in MOVES]
    if unknown:
        raise ValueError(f"generator {generator!r}: unknown move {unknown[0]!r}; moves: {', '.join(MOVES)}")
    return base, moves


def make_input(problem: Problem, generator: str, preset: str, seed: int) -> GeneratedInput:
    """The input `problem:generator:preset:seed`: a generator (`name`, `name*scale` or
    `name~move~...`) at a preset (named, `@class` or `=dim=size,...`)."""
    base, moves = split_moves(generator)
    name, _, scale = base.partition("*")
    g = generate(problem, name, preset=preset, seed=seed)
    if scale:
        g = scale_inputs(problem, g, float(scale))
    if not moves:
        return g
    inputs = dict(g.inputs)
    for k, move in enumerate(moves):
        rng = np.random.default_rng(_seed_for(problem.id, generator, preset, seed, k))
        changed = [spec for spec in problem.spec.inputs if spec.role in MOVES[move].roles]
        for spec in changed if MOVES[move].nth is None else changed[MOVES[move].nth:MOVES[move].nth + 1]:
            arr = inputs[spec.name]
            if not (np.issubdtype(arr.dtype, np.floating) or arr.dtype.name == "bfloat16"):
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                rows = MOVES[move].apply(_rows(arr), rng, _finfo(spec.dtype))
            inputs[spec.name] = _cast(rows.reshape(arr.shape), spec.dtype)
    return GeneratedInput(f"{problem.id}:{generator}:{preset}:{seed}", problem.id, generator, preset, seed,
                          dict(g.dims), inputs)


def _finfo(dtype: str):
    """The float limits of a spec dtype (bfloat16 through ml_dtypes)."""
    import ml_dtypes
    return ml_dtypes.finfo(numpy_dtype(dtype))


def generate_from_id(input_id: str) -> GeneratedInput:
    """Rebuild an input from its id (the catalog problem, generator, preset and seed it names);
    a generator written `name*scale` is `scale_inputs` of that generator's input, one written
    `name~move~...` that input moved (`rewards.moves`).

    >>> generate_from_id("relu:sign_mixed*300:tiny:0").id
    'relu:sign_mixed*300:tiny:0'
    """
    problem_id, generator, preset, seed = parse_input_id(input_id)
    return make_input(load_problem(problem_id), generator, preset, seed)
