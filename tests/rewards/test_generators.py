"""Generators: reproducible from their id, role-aware, dtype-correct."""

import numpy as np
import pytest

from mutagym.rewards.generators import GENERATORS, generate
from mutagym.substrates.catalog import load_problem


class TestGenerate:
    def test_same_id_same_arrays(self):
        p = load_problem("layernorm")
        a = generate(p, "normal", preset="remainder", seed=3)
        b = generate(p, "normal", preset="remainder", seed=3)
        assert a.id == "layernorm:normal:remainder:3"
        for name in a.inputs:
            np.testing.assert_array_equal(a.inputs[name], b.inputs[name])

    def test_different_seed_differs(self):
        p = load_problem("relu")
        assert not np.array_equal(generate(p, "normal", seed=0).inputs["x"], generate(p, "normal", seed=1).inputs["x"])

    def test_identity_affine_versus_perturbed(self):
        """identity_affine hides affine faults (weights 1, biases 0); affine_perturbed does not."""
        p = load_problem("layernorm")
        ident = generate(p, "identity_affine").inputs
        assert np.all(ident["weight"] == 1) and np.all(ident["bias"] == 0)
        pert = generate(p, "affine_perturbed").inputs
        assert len(np.unique(pert["weight"])) > 1 and 0.5 < pert["weight"].mean() < 1.5
        assert abs(pert["bias"].mean()) < 0.1 and pert["bias"].std() > 0

    def test_sign_mixed_has_negatives_uniform01_does_not(self):
        p = load_problem("relu")
        assert generate(p, "sign_mixed").inputs["x"].min() < 0
        assert generate(p, "uniform01").inputs["x"].min() >= 0

    def test_large_offset_shifts_activations(self):
        assert generate(load_problem("softmax"), "large_offset").inputs["x"].mean() > 90

    def test_dtypes_follow_the_spec(self):
        assert generate(load_problem("relu_fp16"), "normal").inputs["x"].dtype == np.float16
        assert generate(load_problem("gelu_bf16"), "normal").inputs["x"].dtype.name == "bfloat16"

    def test_shapes_follow_the_preset(self):
        p = load_problem("softmax")
        g = generate(p, "normal", preset="tiny")
        assert g.inputs["x"].shape == p.shape("x", g.dims)

    def test_unknown_generator_lists_known(self):
        with pytest.raises(KeyError, match="unknown generator 'gaussian'; known: uniform01"):
            generate(load_problem("relu"), "gaussian")

    def test_every_generator_runs_on_a_norm_problem(self):
        p = load_problem("layernorm")
        for name in GENERATORS:
            assert all(np.isfinite(v).all() for v in generate(p, name).inputs.values())
