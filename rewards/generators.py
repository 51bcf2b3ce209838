"""Input generators: named, seeded recipes that make concrete, reproducible inputs for a problem.

An input is identified by `problem:generator:preset:seed`, and the same id always gives the same
arrays (`moves.generate_from_id` rebuilds it). Shape targeting is the preset: a named one (`official`,
`remainder`, `tiny`, `large_reduction`) or `@<class>`, a shape class of `rewards.shapes` whose
dims `draw_dims(problem, class, seed)` draws (`relu:normal:@mod4_2:17`): an input is generator +
preset + seed. Generators are role-aware:
constrained roles keep their meaning under every recipe (`running_var` and `positive` stay > 0,
`probability` rows sum to 1, `label`/`index` stay in [low, high), `mask` is 0/1), and the affine
roles are where several recipes differ on purpose, because identity norm parameters hide the six
LayerNorm affine faults. "Data" roles are `activation`, `logits`, `sequence` and `target`: the
structured recipes shape those and draw every other free role from N(0, 1).

| generator | values | targets (fault families) |
| --- | --- | --- |
| `uniform01` | U[0, 1) everywhere, norm parameters at identity (KernelBench) | little: the weak baseline |
| `normal` | N(0, 1), norm parameters perturbed | arithmetic (sign faults, dropped terms) |
| `sign_mixed` | U[-1, 1), norm parameters perturbed | input_domain (deleted ReLU / abs / max(., 0)) |
| `scaled_x3` | KernelBench's U[0, 1) activations x 3, parameters untouched (KB-Verified) | arithmetic (scale-dependent terms) |
| `scaled_x0_01` | U[0, 1) activations x 0.01, parameters untouched (KB-Verified) | arithmetic, precision (eps placement) |
| `negated` | -U[0, 1) activations, parameters untouched (KB-Verified) | input_domain (ReLU / abs) |
| `identity_affine` | N(0, 1), weights 1, biases 0 (SOL-ExecBench default) | control: hides affine faults |
| `affine_perturbed` | N(0, 1), weights 1 + 0.1 N(0,1), biases 0.1 N(0,1) | arithmetic (the six LayerNorm affine faults) |
| `large_magnitude` | N(0, 1) x 10^U(3, 4), sign-mixed, on every free role (the fuzz recipe) | false-reject control: correct fp32 kernels fail on large reductions |
| `large_offset` | N(0, 1) + 100 on activations and logits | input_domain, precision (missing max-subtraction, cancellation) |
| `peaked_logits` | N(0, 1) with one entry per row raised by 30 | input_domain, precision (softmax overflow, argmax) |
| `flat_logits` | 0.5 + 1e-3 N(0, 1) on data roles | arithmetic (normaliser faults: 1/cols vs 1/(cols-1)) |
| `tiny_variance` | per-row c + 1e-4 N(0, 1), c ~ U[-1, 1) | precision (eps witness: dropped / misplaced eps) |
| `negative_heavy` | 90 % -abs(N(0, 1)), 10 % abs(N(0, 1)) | input_domain (ReLU / abs / clamp deleted) |
| `sparse` | 90 % zeros, the rest N(0, 1) | boundary, indexing (wrong element read shows) |
| `one_hot` | one 1 per row (last dim), zeros elsewhere | indexing (off-by-one, wrong stride) |
| `monotone` | N(0, 1) sorted ascending along the last dim | synchronization, indexing (scans: order and carry faults) |
| `boundary_index` | labels / indices alternate low and high - 1, data N(0, 1) | boundary, indexing (first / last class) |

Each entry's `description` is what a policy reads of it: the task prompt gives every recipe that
can reach a problem one line, `describe(problem, name)` (`tests/docs/test_prompt_truth.py` checks
the lines against the drawn arrays). The value families below (`FAMILIES`) are what the gate draws on top: the kill matrix's candidate
set stays the 18 `GENERATORS` above. A family applies only where its values mean something
(`families_for(problem)`; `generate` raises `NotApplicable` elsewhere, `why_not` says why), and
"rows" are rows along the last dim (a 1-d input is one row). Every substrate and variant passes
each family on every shape class, compared as the validity gate compares
(`benchmarks/bench_catalog_range.py`, `tests/substrates/test_catalog_range.py`).

| family | values | applies to | targets (fault families) |
| --- | --- | --- | --- |
| `masked` | N(0, 1) logits with -inf at a drawn fraction (<= 90 %) of each row, all but one in the first row, never a whole row; labels pick finite logits | `logits` inputs (softmax, log_softmax, cross_entropy) | input_domain, boundary (-inf - -inf = NaN in online max) |
| `ties` | values on {-1, -0.5, 0, 0.5, 1}; each row's max twice and min twice at drawn places | data roles | indexing, arithmetic (argmax / argmin tie-break, max init) |
| `integers` | integers in [-8, 8] | data roles, not products (cumprod, prod_dim) | arithmetic, precision (exact sums, rounding) |
| `negative_rows` | every even row -(0.01 + abs(N(0, 1))), odd rows N(0, 1) | data roles | input_domain (max / norm initialised at 0) |
| `zero_rows` | every third row all zeros (never every row) | data inputs with rows | boundary, arithmetic (0 / 0 in normalisers, eps) |
| `overflow` | half the entries +-U(89, 120), the rest 3 N(0, 1); the first row all +U(89, 120) | `logits` inputs and the exp activations (`EXP_PROBLEMS`) | input_domain, precision (naive exp overflows past 88.7) |
| `long_tail` | rows of one peak U(0.6, 0.999) plus masses 10^U(-8, 0) renormalised; `logits` get their log | `probability` and `logits` inputs (kl_div, cross_entropy, softmax) | precision (log of tiny masses, underflow) |
| `heavy_tailed` | Student-t with 2 degrees of freedom | data roles, not products | precision, arithmetic (outliers, cancellation) |
| `hundreds` | sign-mixed multiples of 32 from 96 to 384 (products and sums exact in float32) | float16 / bfloat16 data, not products | precision (half-precision accumulation overflows) |

>>> from mutagym.substrates.catalog import load_problem
>>> g = generate(load_problem("relu"), "negative_heavy", preset="tiny", seed=1)
>>> g.id, g.inputs["x"].shape, g.inputs["x"].dtype.name
('relu:negative_heavy:tiny:1', (3,), 'float32')
>>> generate(load_problem("relu"), "negative_heavy", preset="tiny", seed=1).inputs["x"].tolist() == g.inputs["x"].tolist()
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..runtime.buffers import numpy_dtype
from ..substrates.catalog import Problem
from .shapes import draw_dims

__all__ = ["ALL_GENERATORS", "DATA_ROLES", "EXP_PROBLEMS", "FAMILIES", "GENERATORS", "GeneratedInput", "describe",
           "ORDINARY_GENERATORS", "dims_preset", "explicit_dims",
           "Generator", "NotApplicable", "OVERFLOW_RANGE", "HUNDREDS_STEP", "PRODUCT_PROBLEMS", "TIE_GRID", "families_for",
           "generate", "parse_input_id", "scale_inputs", "why_not"]

AFFINE_ROLES = ("affine_scale", "affine_shift")
OFFSET_ROLES = ("activation", "logits")
#: Roles that hold the data a kernel works on (what the structured recipes shape).
DATA_ROLES = ("activation", "logits", "sequence", "target")
#: Float roles without a constraint: what `large_magnitude` and `scale_inputs` scale.
FREE_ROLES = DATA_ROLES + ("weight_matrix", "bias", "running_mean")


@dataclass(frozen=True)
class GeneratedInput:
    """One concrete input set for a problem, reproducible from `id`."""

    id: str
    problem: str
    generator: str
    preset: str
    seed: int
    dims: dict[str, int]
    inputs: dict[str, np.ndarray]


Recipe = Callable[[np.random.Generator, tuple, str], np.ndarray]


@dataclass(frozen=True)
class Generator:
    """A named recipe: `values(rng, shape, role)` for every free role, how norm parameters are set
    (`"identity"` or `"perturbed"`), how integer roles are drawn (`"uniform"`, `"boundary"`, or
    `"finite"`: a label picks a finite logit of its row), and the fault families it targets (the
    module table). A value family also says where it applies (`applies(problem)`: "" or why not)
    and may draw probability rows itself (`probability(rng, shape)`).

    `description` is what a policy reads of it in the task prompt (`describe` adds what it does
    to the problem's norm parameters and labels): the values, and where zeros, repeats, signs and
    extremes fall. `non_finite` names the non-finite values it puts in an input (`"-inf"`); every
    other recipe draws finite values only (the prompt says so, a test checks the arrays)."""

    name: str
    values: Recipe
    affine: str
    targets: tuple[str, ...]
    description: str
    index: str = "uniform"
    applies: Callable[[Problem], str] | None = None
    probability: Callable[[np.random.Generator, tuple], np.ndarray] | None = None
    non_finite: tuple[str, ...] = ()


def _seed_for(*parts: object) -> int:
    """A stable 64-bit seed from the input's identity (independent of Python's hash salt)."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little")


# ------------------------------------------------------------------------------- value recipes
def _uniform01(rng, shape, role):
    return rng.random(shape)


def _normal(rng, shape, role):
    return rng.standard_normal(shape)


def _sign_mixed(rng, shape, role):
    return rng.uniform(-1.0, 1.0, shape)


def _large_offset(rng, shape, role):
    base = rng.standard_normal(shape)
    return base + 100.0 if role in OFFSET_ROLES else base


def _kb_scaled(factor: float) -> Recipe:
    """KernelBench-Verified: KernelBench's U[0, 1) activations times `factor`; other roles as drawn."""
    def recipe(rng, shape, role):
        base = rng.random(shape)
        return base * factor if role in DATA_ROLES else base
    return recipe


def _large_magnitude(rng, shape, role):
    base = rng.standard_normal(shape)
    if role not in FREE_ROLES:
        return base
    return base * 10.0 ** rng.uniform(3.0, 4.0, shape)


def _data_only(structured: Recipe) -> Recipe:
    """Apply `structured` to data roles; N(0, 1) elsewhere."""
    def recipe(rng, shape, role):
        return structured(rng, shape) if role in DATA_ROLES else rng.standard_normal(shape)
    return recipe


def _rows(shape) -> tuple[int, int]:
    """(number of rows, row length) of `shape` seen as rows along the last dim."""
    cols = shape[-1] if shape else 1
    return int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1, cols


def _peaked(rng, shape):
    base = rng.standard_normal(shape)
    rows, cols = _rows(shape)
    flat = base.reshape(rows, cols)
    flat[np.arange(rows), rng.integers(0, cols, rows)] += 30.0
    return flat.reshape(shape)


def _flat(rng, shape):
    return 0.5 + 1e-3 * rng.standard_normal(shape)


def _tiny_variance(rng, shape):
    rows, cols = _rows(shape)
    c = rng.uniform(-1.0, 1.0, (rows, 1))
    return (c + 1e-4 * rng.standard_normal((rows, cols))).reshape(shape)


def _negative_heavy(rng, shape):
    magnitude = np.abs(rng.standard_normal(shape))
    return np.where(rng.random(shape) < 0.9, -magnitude, magnitude)


def _sparse(rng, shape):
    values = rng.standard_normal(shape)
    return np.where(rng.random(shape) < 0.9, 0.0, values)


def _one_hot(rng, shape):
    rows, cols = _rows(shape)
    out = np.zeros((rows, cols))
    out[np.arange(rows), rng.integers(0, cols, rows)] = 1.0
    return out.reshape(shape)


def _monotone(rng, shape):
    return np.sort(rng.standard_normal(shape), axis=-1)


def _g(name, values, affine, targets, description, index="uniform") -> tuple[str, Generator]:
    return name, Generator(name, values, affine, tuple(targets), description, index)


#: name -> Generator, in the module table's order.
GENERATORS: dict[str, Generator] = dict([
    _g("uniform01", _uniform01, "identity", (), "U[0, 1) in every float input (KernelBench's inputs)"),
    _g("normal", _normal, "perturbed", ("arithmetic",), "N(0, 1) in every float input"),
    _g("sign_mixed", _sign_mixed, "perturbed", ("input_domain",), "U[-1, 1) in every float input"),
    _g("scaled_x3", _kb_scaled(3.0), "identity", ("arithmetic",),
       "data inputs U[0, 1) x 3, other float inputs U[0, 1)"),
    _g("scaled_x0_01", _kb_scaled(0.01), "identity", ("arithmetic", "precision"),
       "data inputs U[0, 1) x 0.01, other float inputs U[0, 1)"),
    _g("negated", _kb_scaled(-1.0), "identity", ("input_domain",),
       "data inputs -U[0, 1) (none positive), other float inputs U[0, 1)"),
    _g("identity_affine", _normal, "identity", (), "N(0, 1) in every float input (SOL-ExecBench's inputs)"),
    _g("affine_perturbed", _normal, "perturbed", ("arithmetic",), "N(0, 1) in every float input"),
    _g("large_magnitude", _large_magnitude, "perturbed", ("false_reject_control",),
       "N(0, 1) x 10^U(3, 4) (typical magnitudes 10^3 to 10^4, both signs) in data inputs, "
       "weight matrices, biases and running means; N(0, 1) elsewhere"),
    _g("large_offset", _large_offset, "perturbed", ("input_domain", "precision"),
       "N(0, 1) + 100 in activation and logits inputs, N(0, 1) elsewhere"),
    _g("peaked_logits", _data_only(_peaked), "perturbed", ("input_domain", "precision"),
       "data inputs N(0, 1) with one entry per row raised by 30; other float inputs N(0, 1)"),
    _g("flat_logits", _data_only(_flat), "perturbed", ("arithmetic",),
       "data inputs 0.5 + 1e-3 N(0, 1) (nearly equal values); other float inputs N(0, 1)"),
    _g("tiny_variance", _data_only(_tiny_variance), "perturbed", ("precision",),
       "data inputs: per row a constant c ~ U[-1, 1) plus 1e-4 N(0, 1); other float inputs N(0, 1)"),
    _g("negative_heavy", _data_only(_negative_heavy), "perturbed", ("input_domain",),
       "data inputs: 90 % of entries -|N(0, 1)|, the rest |N(0, 1)|; other float inputs N(0, 1)"),
    _g("sparse", _data_only(_sparse), "perturbed", ("boundary", "indexing"),
       "data inputs: 90 % of entries exactly 0, the rest N(0, 1); other float inputs N(0, 1)"),
    _g("one_hot", _data_only(_one_hot), "perturbed", ("indexing",),
       "data inputs: one 1 per row at a drawn place, 0 elsewhere; other float inputs N(0, 1)"),
    _g("monotone", _data_only(_monotone), "perturbed", ("synchronization", "indexing"),
       "data inputs N(0, 1) sorted ascending along each row; other float inputs N(0, 1)"),
    _g("boundary_index", _normal, "perturbed", ("boundary", "indexing"),
       "N(0, 1) in every float input", index="boundary"),
])


# ------------------------------------------------------------------------------- value families
#: Problems whose math runs exp() on the data, so a naive kernel overflows past x > 88 (float32's
#: exp overflows at 88.7); softmax-like problems are found by their `logits` role.
EXP_PROBLEMS = ("elu", "gelu_tanh", "selu", "sigmoid", "silu", "softplus", "tanh")
#: Problems that multiply the data along a row: integers, heavy tails or hundreds overflow float32
#: there while the fp64 product is finite, so those families would reject correct kernels.
PRODUCT_PROBLEMS = ("cumprod", "prod_dim")
#: Where `overflow` puts its large arguments: past float32 exp's overflow at 88.7.
OVERFLOW_RANGE = (89.0, 120.0)
#: The grid `ties` draws from: exact in every float dtype, |v| <= 1 so products stay bounded.
TIE_GRID = (-1.0, -0.5, 0.0, 0.5, 1.0)


def _roles(problem: Problem) -> set[str]:
    return {t.role for t in problem.inputs}


def _needs(*, roles: tuple[str, ...] = DATA_ROLES, what: str = "a data input", ids: tuple[str, ...] = (),
           not_ids: tuple[str, ...] = (), half: bool = False, rows: bool = False) -> Callable[[Problem], str]:
    """`applies(problem)`: "" when the problem has an input of one of `roles` (or is one of `ids`),
    is none of `not_ids`, has a float16 / bfloat16 data input when `half`, and a data input with
    rows (2 dims or more) when `rows`; else why not."""
    def applies(problem: Problem) -> str:
        if problem.id in not_ids:
            return (f"{problem.id} multiplies the data along a row: float32 overflows where the fp64 "
                    "product is finite, so correct kernels would fail")
        if problem.id not in ids and not _roles(problem) & set(roles):
            return f"{problem.id} has no {what}"
        data = [t for t in problem.inputs if t.role in DATA_ROLES]
        if half and not any(t.dtype in ("float16", "bfloat16") for t in data):
            return f"{problem.id} has no float16 / bfloat16 data input (no half-precision accumulation)"
        if rows and not any(len(t.shape) >= 2 for t in data):
            return f"{problem.id} has no data input with rows (every data input is one vector)"
        return ""
    return applies


def _row_view(rng, shape, fill: Callable[[np.random.Generator, int, int], np.ndarray]) -> np.ndarray:
    rows, cols = _rows(shape)
    return fill(rng, rows, cols).reshape(shape)


def _masked(rng, shape, role):
    """Logits with -inf entries: a drawn fraction (up to 90 %) per row, every entry but one in the
    first row, never a whole row."""
    def fill(rng, rows, cols):
        values = rng.standard_normal((rows, cols))
        masked = rng.random((rows, cols)) < rng.uniform(0.0, 0.9, (rows, 1))
        masked[0] = True
        masked[np.arange(rows), rng.integers(0, cols, rows)] = False
        values[masked] = -np.inf
        return values
    return _row_view(rng, shape, fill) if role == "logits" else rng.standard_normal(shape)


def _ties(rng, shape):
    """Values on `TIE_GRID`; each row holds its maximum (1) twice and, with 4 entries or more, its
    minimum (-1) twice, at drawn places."""
    def fill(rng, rows, cols):
        values = np.asarray(TIE_GRID)[rng.integers(0, len(TIE_GRID), (rows, cols))]
        if cols >= 2:
            k = min(cols, 4)
            places = np.argpartition(rng.random((rows, cols)), k - 1, axis=1)[:, :k]
            r = np.arange(rows)
            values[r, places[:, 0]] = values[r, places[:, 1]] = 1.0
            if k == 4:
                values[r, places[:, 2]] = values[r, places[:, 3]] = -1.0
        return values
    return _row_view(rng, shape, fill)


def _integers(rng, shape):
    return rng.integers(-8, 9, shape).astype(np.float64)


def _negative_rows(rng, shape):
    """Every even row strictly negative (-(0.01 + |N(0, 1)|)), odd rows N(0, 1)."""
    def fill(rng, rows, cols):
        values = rng.standard_normal((rows, cols))
        values[::2] = -(0.01 + np.abs(values[::2]))
        return values
    return _row_view(rng, shape, fill)


def _zero_rows(rng, shape):
    """Every third row (from the first) all zeros, the others N(0, 1); never every row."""
    def fill(rng, rows, cols):
        values = rng.standard_normal((rows, cols))
        if rows > 1:
            values[::3] = 0.0
        return values
    return _row_view(rng, shape, fill)


def _overflow(rng, shape):
    """Half the entries +-U(89, 120) (past float32 exp's overflow), the rest 3 N(0, 1); with rows,
    the first row entirely +U(89, 120)."""
    def fill(rng, rows, cols):
        big = rng.uniform(*OVERFLOW_RANGE, (rows, cols))
        values = np.where(rng.random((rows, cols)) < 0.5, big * rng.choice((-1.0, 1.0), (rows, cols)),
                          3.0 * rng.standard_normal((rows, cols)))
        if rows > 1:
            values[0] = big[0]
        return values
    return _row_view(rng, shape, fill)


def _long_tail_probabilities(rng, shape):
    """Rows summing to 1: one peak of U(0.6, 0.999) at a drawn place, the rest spread over the row
    with weights 10^U(-8, 0) (masses over eight orders of magnitude)."""
    def fill(rng, rows, cols):
        tail = 10.0 ** rng.uniform(-8.0, 0.0, (rows, cols))
        r, peak_at = np.arange(rows), rng.integers(0, cols, rows)
        tail[r, peak_at] = 0.0
        peak = rng.uniform(0.6, 0.999, rows) if cols > 1 else np.ones(rows)
        total = tail.sum(axis=1, keepdims=True)
        out = tail * ((1.0 - peak)[:, None] / np.where(total > 0, total, 1.0))
        out[r, peak_at] = peak
        return out
    return _row_view(rng, shape, fill)


def _long_tail(rng, shape, role):
    return np.log(_long_tail_probabilities(rng, shape)) if role == "logits" else rng.standard_normal(shape)


def _heavy_tailed(rng, shape):
    return rng.standard_t(2.0, shape)


#: `hundreds` draws multiples of this step: exact in float16 and bfloat16 up to 2048, and every
#: product (a multiple of 1024) and partial sum exact in float32, so a correct kernel's float32
#: accumulation has no error at all, however long the reduction (U(100, 400) reals rejected
#: correct float32 matmul_fp16 kernels at k = 10852), while a half accumulator still overflows.
HUNDREDS_STEP = 32.0


def _hundreds(rng, shape):
    """Sign-mixed multiples of 32 from 96 to 384."""
    return HUNDREDS_STEP * rng.integers(3, 13, shape) * rng.choice((-1.0, 1.0), shape)


def _family(name, values, targets, description, applies, index="uniform", probability=None, non_finite=()):
    return name, Generator(name, values, "perturbed", tuple(targets), description, index, applies, probability,
                           tuple(non_finite))


#: name -> value family, in the module table's order: what the gate draws on top of `GENERATORS`
#: (the kill matrix's candidates stay those 18). Each says where it applies (`families_for`).
FAMILIES: dict[str, Generator] = dict([
    _family("masked", _masked, ("input_domain", "boundary"),
            "logits inputs N(0, 1) with -inf at a drawn fraction (up to 90 %) of each row, every entry "
            "but one -inf in the first row, never a whole row; other float inputs N(0, 1)",
            _needs(roles=("logits",), what="logits input: -inf masking is defined for scores"),
            index="finite", non_finite=("-inf",)),
    _family("ties", _data_only(_ties), ("indexing", "arithmetic"),
            "data inputs on {-1, -0.5, 0, 0.5, 1}: each row's maximum (1) at least twice and, in rows "
            "of 4 or more, its minimum (-1) at least twice; other float inputs N(0, 1)", _needs()),
    _family("integers", _data_only(_integers), ("arithmetic", "precision"),
            "data inputs: integers in [-8, 8] (zeros and repeats common); other float inputs N(0, 1)",
            _needs(not_ids=PRODUCT_PROBLEMS)),
    _family("negative_rows", _data_only(_negative_rows), ("input_domain",),
            "data inputs: rows 0, 2, 4, ... all negative, -(0.01 + |N(0, 1)|), the other rows N(0, 1); "
            "other float inputs N(0, 1)", _needs()),
    _family("zero_rows", _data_only(_zero_rows), ("boundary", "arithmetic"),
            "data inputs: rows 0, 3, 6, ... all 0 (with more than one row), the other rows N(0, 1); "
            "other float inputs N(0, 1)", _needs(rows=True)),
    _family("overflow", _data_only(_overflow), ("input_domain", "precision"),
            "data inputs: half the entries +-U(89, 120) (float32 exp overflows past 88.7), the rest "
            "3 N(0, 1); with more than one row, row 0 all +U(89, 120); other float inputs N(0, 1)",
            _needs(roles=("logits",), ids=EXP_PROBLEMS,
                   what="exp of its data (no logits, not an exp activation)")),
    _family("long_tail", _long_tail, ("precision",),
            "probability inputs: rows summing to 1 of one peak U(0.6, 0.999) and the rest in masses "
            "spread over eight orders of magnitude; logits inputs: the log of such rows; other float "
            "inputs N(0, 1)",
            _needs(roles=("probability", "logits"), what="probability or logits input"),
            probability=_long_tail_probabilities),
    _family("heavy_tailed", _data_only(_heavy_tailed), ("precision", "arithmetic"),
            "data inputs: Student-t with 2 degrees of freedom (rare outliers of 100 and more); other "
            "float inputs N(0, 1)", _needs(not_ids=PRODUCT_PROBLEMS)),
    _family("hundreds", _data_only(_hundreds), ("precision",),
            "data inputs: multiples of 32 from 96 to 384, both signs (exact in half precision; sums "
            "of them overflow a float16 accumulator); other float inputs N(0, 1)",
            _needs(not_ids=PRODUCT_PROBLEMS, half=True)),
])
#: Every recipe an input id may name: the kill matrix's `GENERATORS` and the gate's `FAMILIES`.
#: The ordinary dense-random generators: every suite keeps one (the paper's best suite shape is
#: one ordinary input plus targeted ones), and the gate pairs shape classes with them.
ORDINARY_GENERATORS = ("normal", "sign_mixed")
ALL_GENERATORS: dict[str, Generator] = {**GENERATORS, **FAMILIES}


def why_not(problem: Problem, generator: str) -> str:
    """Why `generator` does not apply to `problem` ("" when it does; `GENERATORS` always do).

    >>> from mutagym.substrates.catalog import load_problem
    >>> why_not(load_problem("relu"), "masked")
    'relu has no logits input: -inf masking is defined for scores'
    """
    gen = ALL_GENERATORS[generator]
    return gen.applies(problem) if gen.applies is not None else ""


def describe(problem: Problem, generator: str) -> str:
    """What a policy reads of `generator` (a name of `ALL_GENERATORS`, or `name*scale`) on
    `problem`: its `description`, then how it sets the problem's constrained inputs, as `_values`
    draws them, then the scale and the non-finite values it holds.

    >>> from mutagym.substrates.catalog import load_problem
    >>> describe(load_problem("layernorm"), "identity_affine")
    "N(0, 1) in every float input (SOL-ExecBench's inputs); norm weights (affine_scale) 1, norm biases (affine_shift) 0"
    >>> describe(load_problem("relu"), "sign_mixed*300")
    'U[-1, 1) in every float input; then data inputs, weight matrices, biases and running means x 300'
    """
    base, _, scale = generator.partition("*")
    gen = ALL_GENERATORS[base]
    roles = _roles(problem)
    parts = [gen.description]
    if roles & set(AFFINE_ROLES):
        parts.append("norm weights (affine_scale) 1, norm biases (affine_shift) 0" if gen.affine == "identity"
                     else "norm weights (affine_scale) 1 + 0.1 N(0, 1), norm biases (affine_shift) 0.1 N(0, 1)")
    if roles & {"running_var", "positive"}:
        parts.append("positive and running_var inputs 0.5 + |a draw as above|")
    if "probability" in roles and gen.probability is None:
        parts.append("probability rows the softmax of N(0, 1) rows")
    if roles & {"label", "index"}:
        parts.append({"boundary": "labels / indices alternate between their lowest and highest value",
                      "finite": "each label picks a finite logit of its row" if "logits" in roles else
                                "labels / indices uniform over their range",
                      "uniform": "labels / indices uniform over their range"}[gen.index])
    if "mask" in roles:
        parts.append("masks 0 or 1 at random")
    if scale:
        parts.append(f"then data inputs, weight matrices, biases and running means x {float(scale):g}")
    if gen.non_finite:
        parts.append("holds " + " and ".join(gen.non_finite))
    return "; ".join(parts)


def families_for(problem: Problem) -> list[str]:
    """The value families (`FAMILIES`) that apply to `problem` and may judge kernels (no
    false-reject control), in table order.

    >>> from mutagym.substrates.catalog import load_problem
    >>> families_for(load_problem("softmax"))
    ['masked', 'ties', 'integers', 'negative_rows', 'zero_rows', 'overflow', 'long_tail', 'heavy_tailed']
    """
    return [n for n, g in FAMILIES.items()
            if "false_reject_control" not in g.targets and not why_not(problem, n)]


# ------------------------------------------------------------------------------- drawing
def _integer_range(spec, dims) -> tuple[int, int]:
    from ..substrates.schema import evaluate_expression
    low = evaluate_expression(spec.low, dims) if spec.low is not None else 0
    return low, evaluate_expression(spec.high, dims)


def _finite_labels(rng, shape, made: dict, low: int) -> np.ndarray | None:
    """Labels that pick, per row, a drawn finite entry of the logits whose rows they label (so a
    masked logit is never the target); None when no input holds such logits."""
    for arr, role in made.values():
        if role == "logits" and arr.shape[:-1] == tuple(shape):
            finite = np.isfinite(arr.reshape(-1, arr.shape[-1]))
            keys = np.where(finite, rng.random(finite.shape), -1.0)
            return (low + keys.argmax(axis=1)).reshape(shape)
    return None


def _values(problem: Problem, spec, shape, dims, rng, gen: Generator, made: dict) -> np.ndarray:
    """The values of input `spec` under `gen`; `made` holds the inputs drawn before it (name ->
    (array, role)), which `finite` labels read."""
    role = spec.role
    if role in ("label", "index"):
        low, high = _integer_range(spec, dims)
        if gen.index == "boundary":
            return np.where(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape) % 2 == 0,
                            low, high - 1)
        if gen.index == "finite" and (labels := _finite_labels(rng, shape, made, low)) is not None:
            return labels
        return rng.integers(low, high, shape)
    if role == "mask":
        return rng.integers(0, 2, shape)
    if role in AFFINE_ROLES:
        if gen.affine == "identity":
            return np.full(shape, 1.0 if role == "affine_scale" else 0.0)
        noise = 0.1 * rng.standard_normal(shape)
        return 1.0 + noise if role == "affine_scale" else noise
    if role in ("running_var", "positive"):
        return 0.5 + np.abs(gen.values(rng, shape, role))
    if role == "probability" and gen.probability is not None:
        return gen.probability(rng, shape)
    if role == "probability":
        logits = rng.standard_normal(shape)
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return gen.values(rng, shape, role)


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` as `dtype`, finite values clipped into its range (large_magnitude on float16);
    infinities (masked logits) stay. bfloat16 is rounded from float32, as ml_dtypes did before 0.7
    (0.7 rounds float64 directly, which differs in the last bit where float32 already rounded):
    an input id's arrays must not depend on the library's version."""
    np_dtype = numpy_dtype(dtype)
    if np.issubdtype(np.asarray(values).dtype, np.floating) and dtype in ("float16", "bfloat16"):
        import ml_dtypes
        top = float(ml_dtypes.finfo(np_dtype).max) / 2
        values = np.where(np.isinf(values), values, np.clip(values, -top, top))
        if dtype == "bfloat16":
            values = np.asarray(values).astype(np.float32)
    return np.ascontiguousarray(np.asarray(values).astype(np_dtype))


class NotApplicable(ValueError):
    """A value family was asked for on a problem it does not apply to (`why_not` says why)."""


def generate(problem: Problem, generator: str, *, preset: str = "official", seed: int = 0) -> GeneratedInput:
    """Make the input set `problem:generator:preset:seed`.

    `preset` is a preset name, `@<class>` for the dims `rewards.shapes.draw_dims(problem,
    class, seed)` draws, or `=dim=size,...` for explicit dims (`explicit_dims`). Raises KeyError naming the known generators for an unknown one (and for
    an unknown preset or class), `NotApplicable` for a family that does not apply to the problem.

    >>> from mutagym.substrates.catalog import load_problem
    >>> g = generate(load_problem("layernorm"), "identity_affine", preset="tiny")
    >>> g.inputs["weight"].tolist(), g.inputs["bias"].tolist()
    ([1.0, 1.0], [0.0, 0.0])
    >>> generate(load_problem("relu"), "normal", preset="@mod4_2", seed=17).dims["n"] % 4
    2
    """
    if generator not in ALL_GENERATORS:
        raise KeyError(f"unknown generator {generator!r}; known: {', '.join(ALL_GENERATORS)}")
    gen = ALL_GENERATORS[generator]
    reason = why_not(problem, generator)
    if reason:
        raise NotApplicable(f"generator {generator!r} does not apply to problem {problem.id!r}: {reason}")
    dims = (draw_dims(problem, preset[1:], seed) if preset.startswith("@")
            else explicit_dims(problem, preset) if preset.startswith("=") else problem.preset(preset))
    rng = np.random.default_rng(_seed_for(problem.id, generator, preset, seed))
    inputs, made = {}, {}
    for spec in problem.spec.inputs:
        shape = problem.shape(spec.name, dims)
        inputs[spec.name] = _cast(_values(problem, spec, shape, dims, rng, gen, made), spec.dtype)
        made[spec.name] = (inputs[spec.name], spec.role)
    return GeneratedInput(f"{problem.id}:{generator}:{preset}:{seed}", problem.id, generator, preset,
                          seed, dims, inputs)


def explicit_dims(problem: Problem, preset: str) -> dict[str, int]:
    """The dims of an explicit preset `=name=size,name=size`, each inside its declared range
    (ValueError naming the preset otherwise); `dims_preset` writes one.

    >>> from mutagym.substrates.catalog import load_problem
    >>> explicit_dims(load_problem("softmax"), "=cols=5,rows=1")
    {'cols': 5, 'rows': 1}
    """
    try:
        sizes = {name: int(size) for name, size in (part.split("=") for part in preset[1:].split(","))}
    except ValueError:
        raise ValueError(f"preset {preset!r} is not of the form '=dim=size,dim=size'") from None
    try:
        return problem.check_dims(sizes)
    except ValueError as err:
        raise ValueError(f"preset {preset!r}: {err}") from None


def dims_preset(dims: dict[str, int]) -> str:
    """The explicit preset naming `dims` (names sorted, so the same dims give the same id).

    >>> dims_preset({"rows": 1, "cols": 5})
    '=cols=5,rows=1'
    """
    return "=" + ",".join(f"{name}={int(size)}" for name, size in sorted(dims.items()))


def parse_input_id(input_id: str) -> tuple[str, str, str, int]:
    """Split `problem:generator:preset:seed` into its parts.

    >>> parse_input_id("softmax:peaked_logits:remainder:2")
    ('softmax', 'peaked_logits', 'remainder', 2)
    >>> parse_input_id("softmax:normal")
    Traceback (most recent call last):
    ...
    ValueError: input id 'softmax:normal' is not of the form 'problem:generator:preset:seed'
    """
    parts = input_id.split(":")
    if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
        raise ValueError(f"input id {input_id!r} is not of the form 'problem:generator:preset:seed'")
    return parts[0], parts[1], parts[2], int(parts[3])


def scale_inputs(problem: Problem, base: GeneratedInput, scale: float) -> GeneratedInput:
    """`base` with every free float input (data roles, weight matrices, biases) times `scale`.

    Constrained roles and norm parameters are kept, so the result still honours every role. The
    id is `problem:generator*scale:preset:seed` (used by the validity ceiling).

    >>> from mutagym.substrates.catalog import load_problem
    >>> p = load_problem("relu")
    >>> s = scale_inputs(p, generate(p, "sign_mixed", preset="tiny"), 300)
    >>> s.id
    'relu:sign_mixed*300:tiny:0'
    """
    inputs = {}
    for spec in problem.spec.inputs:
        arr = base.inputs[spec.name]
        if spec.role in FREE_ROLES and np.issubdtype(np.asarray(arr).dtype, np.floating) or (
                spec.role in FREE_ROLES and arr.dtype.name == "bfloat16"):
            arr = _cast(arr.astype(np.float64) * scale, spec.dtype)
        inputs[spec.name] = arr
    return GeneratedInput(f"{base.problem}:{base.generator}*{scale:g}:{base.preset}:{base.seed}",
                          base.problem, f"{base.generator}*{scale:g}", base.preset, base.seed,
                          dict(base.dims), inputs)
