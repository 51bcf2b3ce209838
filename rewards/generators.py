"""Input generators: named, seeded recipes that make concrete, reproducible inputs for a problem.

An input is identified by `problem:generator:preset:seed`, and the same id always gives the same
arrays. Generators are role-aware: constrained roles keep their meaning under every recipe
(`running_var` and `positive` stay > 0, `probability` rows sum to 1, `label`/`index` stay in their
range, `mask` is 0/1), and the affine roles are where several recipes differ on purpose, because
identity norm parameters hide the six LayerNorm affine faults.

| generator | values | exposes |
| --- | --- | --- |
| `uniform01` | U[0, 1) everywhere, norm parameters at identity (KernelBench) | little: the weak baseline |
| `normal` | N(0, 1), norm parameters perturbed | sign faults, dropped terms |
| `sign_mixed` | U[-1, 1), norm parameters perturbed | deleted ReLU / abs / max(., 0) |
| `large_offset` | N(0, 1) + 100 on activations and logits | missing max-subtraction, cancellation |
| `affine_perturbed` | N(0, 1), weights 1 + 0.1 N(0,1), biases 0.1 N(0,1) | the six LayerNorm affine faults |
| `identity_affine` | N(0, 1), weights 1, biases 0 (SOL-ExecBench default) | control: hides affine faults |
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..runtime.buffers import numpy_dtype
from ..substrates.catalog import Problem

AFFINE_ROLES = ("affine_scale", "affine_shift")
OFFSET_ROLES = ("activation", "logits")


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


def _seed_for(*parts: object) -> int:
    """A stable 64-bit seed from the input's identity (independent of Python's hash salt)."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little")


def _uniform01(rng, shape, role):
    return rng.random(shape)


def _normal(rng, shape, role):
    return rng.standard_normal(shape)


def _sign_mixed(rng, shape, role):
    return rng.uniform(-1.0, 1.0, shape)


def _large_offset(rng, shape, role):
    base = rng.standard_normal(shape)
    return base + 100.0 if role in OFFSET_ROLES else base


#: name -> (value recipe, how norm parameters are set: "identity" or "perturbed")
GENERATORS: dict[str, tuple[Callable, str]] = {
    "uniform01": (_uniform01, "identity"),
    "normal": (_normal, "perturbed"),
    "sign_mixed": (_sign_mixed, "perturbed"),
    "large_offset": (_large_offset, "perturbed"),
    "affine_perturbed": (_normal, "perturbed"),
    "identity_affine": (_normal, "identity"),
}


def _values(problem: Problem, spec, shape, dims, rng, recipe, affine) -> np.ndarray:
    role = spec.role
    if role in ("label", "index"):
        from ..substrates.schema import evaluate_expression
        low = evaluate_expression(spec.low, dims) if spec.low is not None else 0
        high = evaluate_expression(spec.high, dims)
        return rng.integers(low, high, shape)
    if role == "mask":
        return rng.integers(0, 2, shape)
    if role in AFFINE_ROLES:
        if affine == "identity":
            return np.full(shape, 1.0 if role == "affine_scale" else 0.0)
        noise = 0.1 * rng.standard_normal(shape)
        return 1.0 + noise if role == "affine_scale" else noise
    if role in ("running_var", "positive"):
        return 0.5 + np.abs(recipe(rng, shape, role))
    if role == "probability":
        logits = rng.standard_normal(shape)
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return recipe(rng, shape, role)


def generate(problem: Problem, generator: str, *, preset: str = "official", seed: int = 0) -> GeneratedInput:
    """Make the input set `problem:generator:preset:seed`.

    Raises KeyError naming the known generators for an unknown one.
    """
    if generator not in GENERATORS:
        raise KeyError(f"unknown generator {generator!r}; known: {', '.join(GENERATORS)}")
    recipe, affine = GENERATORS[generator]
    dims = problem.preset(preset)
    rng = np.random.default_rng(_seed_for(problem.id, generator, preset, seed))
    inputs = {}
    for spec in problem.spec.inputs:
        shape = problem.shape(spec.name, dims)
        values = _values(problem, spec, shape, dims, rng, recipe, affine)
        inputs[spec.name] = np.ascontiguousarray(values.astype(numpy_dtype(spec.dtype)))
    return GeneratedInput(f"{problem.id}:{generator}:{preset}:{seed}", problem.id, generator, preset,
                          seed, dims, inputs)
