"""Input generators: named, seeded recipes that make concrete, reproducible inputs for a problem.

An input is identified by `problem:generator:preset:seed`, and the same id always gives the same
arrays (`generate_from_id` rebuilds it). Shape targeting is the preset (`official`, `remainder`,
`tiny`, `large_reduction`): an input is generator + preset + seed. Generators are role-aware:
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

>>> from mutagym.substrates.catalog import load_problem
>>> g = generate(load_problem("relu"), "negative_heavy", preset="tiny", seed=1)
>>> g.id, g.inputs["x"].shape, g.inputs["x"].dtype.name
('relu:negative_heavy:tiny:1', (3,), 'float32')
>>> generate_from_id(g.id).inputs["x"].tolist() == g.inputs["x"].tolist()
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..runtime.buffers import numpy_dtype
from ..substrates.catalog import Problem

__all__ = ["DATA_ROLES", "GENERATORS", "GeneratedInput", "Generator", "generate", "generate_from_id",
           "parse_input_id", "scale_inputs"]

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
    (`"identity"` or `"perturbed"`), how integer roles are drawn (`"uniform"` or `"boundary"`),
    and the fault families it targets (the module table)."""

    name: str
    values: Recipe
    affine: str
    targets: tuple[str, ...]
    summary: str
    index: str = "uniform"


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


def _g(name, values, affine, targets, summary, index="uniform") -> tuple[str, Generator]:
    return name, Generator(name, values, affine, tuple(targets), summary, index)


#: name -> Generator, in the module table's order.
GENERATORS: dict[str, Generator] = dict([
    _g("uniform01", _uniform01, "identity", (), "U[0, 1), identity norm parameters (KernelBench)"),
    _g("normal", _normal, "perturbed", ("arithmetic",), "N(0, 1)"),
    _g("sign_mixed", _sign_mixed, "perturbed", ("input_domain",), "U[-1, 1)"),
    _g("scaled_x3", _kb_scaled(3.0), "identity", ("arithmetic",), "U[0, 1) activations x 3"),
    _g("scaled_x0_01", _kb_scaled(0.01), "identity", ("arithmetic", "precision"),
       "U[0, 1) activations x 0.01"),
    _g("negated", _kb_scaled(-1.0), "identity", ("input_domain",), "-U[0, 1) activations"),
    _g("identity_affine", _normal, "identity", (), "N(0, 1), weights 1, biases 0 (SOL-ExecBench)"),
    _g("affine_perturbed", _normal, "perturbed", ("arithmetic",),
       "N(0, 1), weights 1 + 0.1 N(0,1), biases 0.1 N(0,1)"),
    _g("large_magnitude", _large_magnitude, "perturbed", ("false_reject_control",),
       "N(0, 1) x 10^U(3, 4) (fuzz)"),
    _g("large_offset", _large_offset, "perturbed", ("input_domain", "precision"), "N(0, 1) + 100"),
    _g("peaked_logits", _data_only(_peaked), "perturbed", ("input_domain", "precision"),
       "one entry per row + 30"),
    _g("flat_logits", _data_only(_flat), "perturbed", ("arithmetic",), "0.5 + 1e-3 N(0, 1)"),
    _g("tiny_variance", _data_only(_tiny_variance), "perturbed", ("precision",),
       "per-row c + 1e-4 N(0, 1)"),
    _g("negative_heavy", _data_only(_negative_heavy), "perturbed", ("input_domain",),
       "90 % negative"),
    _g("sparse", _data_only(_sparse), "perturbed", ("boundary", "indexing"), "90 % zeros"),
    _g("one_hot", _data_only(_one_hot), "perturbed", ("indexing",), "one 1 per row"),
    _g("monotone", _data_only(_monotone), "perturbed", ("synchronization", "indexing"),
       "sorted ascending along the last dim"),
    _g("boundary_index", _normal, "perturbed", ("boundary", "indexing"),
       "indices at low and high - 1", index="boundary"),
])


# ------------------------------------------------------------------------------- drawing
def _integer_range(spec, dims) -> tuple[int, int]:
    from ..substrates.schema import evaluate_expression
    low = evaluate_expression(spec.low, dims) if spec.low is not None else 0
    return low, evaluate_expression(spec.high, dims)


def _values(problem: Problem, spec, shape, dims, rng, gen: Generator) -> np.ndarray:
    role = spec.role
    if role in ("label", "index"):
        low, high = _integer_range(spec, dims)
        if gen.index == "boundary":
            return np.where(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape) % 2 == 0,
                            low, high - 1)
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
    if role == "probability":
        logits = rng.standard_normal(shape)
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return gen.values(rng, shape, role)


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` as `dtype`, clipped into its finite range (large_magnitude on float16)."""
    np_dtype = numpy_dtype(dtype)
    if np.issubdtype(np.asarray(values).dtype, np.floating) and dtype in ("float16", "bfloat16"):
        import ml_dtypes
        top = float(ml_dtypes.finfo(np_dtype).max) / 2
        values = np.clip(values, -top, top)
    return np.ascontiguousarray(np.asarray(values).astype(np_dtype))


def generate(problem: Problem, generator: str, *, preset: str = "official", seed: int = 0) -> GeneratedInput:
    """Make the input set `problem:generator:preset:seed`.

    Raises KeyError naming the known generators for an unknown one.

    >>> from mutagym.substrates.catalog import load_problem
    >>> g = generate(load_problem("layernorm"), "identity_affine", preset="tiny")
    >>> g.inputs["weight"].tolist(), g.inputs["bias"].tolist()
    ([1.0, 1.0], [0.0, 0.0])
    """
    if generator not in GENERATORS:
        raise KeyError(f"unknown generator {generator!r}; known: {', '.join(GENERATORS)}")
    gen = GENERATORS[generator]
    dims = problem.preset(preset)
    rng = np.random.default_rng(_seed_for(problem.id, generator, preset, seed))
    inputs = {}
    for spec in problem.spec.inputs:
        shape = problem.shape(spec.name, dims)
        inputs[spec.name] = _cast(_values(problem, spec, shape, dims, rng, gen), spec.dtype)
    return GeneratedInput(f"{problem.id}:{generator}:{preset}:{seed}", problem.id, generator, preset,
                          seed, dims, inputs)


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


def generate_from_id(input_id: str) -> GeneratedInput:
    """Rebuild an input from its id (the catalog problem, generator, preset and seed it names);
    a generator written `name*scale` is `scale_inputs` of that generator's input.

    >>> generate_from_id("relu:sign_mixed*300:tiny:0").id
    'relu:sign_mixed*300:tiny:0'
    """
    from ..substrates.catalog import load_problem
    problem_id, generator, preset, seed = parse_input_id(input_id)
    problem = load_problem(problem_id)
    base, _, scale = generator.partition("*")
    g = generate(problem, base, preset=preset, seed=seed)
    return scale_inputs(problem, g, float(scale)) if scale else g


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
