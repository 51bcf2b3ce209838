"""Structured generators: documented, reproducible from their id, role constraints kept everywhere."""

import doctest

import numpy as np
import pytest

import mutagym.rewards.generators as generators_module
from mutagym.rewards.generators import GENERATORS, generate, parse_input_id, scale_inputs
from mutagym.rewards.moves import generate_from_id
from mutagym.substrates.catalog import list_problems, load_problem
from mutagym.substrates.schema import evaluate_expression

NEW = ("scaled_x3", "scaled_x0_01", "negated", "large_magnitude", "peaked_logits", "flat_logits",
       "tiny_variance", "negative_heavy", "sparse", "one_hot", "monotone", "boundary_index")


def test_docstrings_run():
    """The module's doctests pass."""
    assert doctest.testmod(generators_module).failed == 0


class TestRegistry:
    def test_every_issue_generator_is_registered(self):
        """The issue's generators (and the five verify uses) are all in GENERATORS."""
        for name in NEW + ("uniform01", "normal", "sign_mixed", "large_offset", "affine_perturbed",
                           "identity_affine"):
            assert name in GENERATORS, name

    def test_every_generator_is_in_the_module_table_with_targets(self):
        """Each generator has a row in the module table and a tuple of target families."""
        doc = generators_module.__doc__
        for name, gen in GENERATORS.items():
            assert f"| `{name}` |" in doc, name
            assert gen.name == name and isinstance(gen.targets, tuple)


class TestRoleConstraints:
    @pytest.mark.parametrize("generator", list(GENERATORS))
    def test_constraints_hold_on_every_problem(self, generator):
        """Every generator on every problem (tiny preset): finite, right dtype and shape, roles kept."""
        for pid in list_problems():
            p = load_problem(pid)
            g = generate(p, generator, preset="tiny", seed=2)
            for spec in p.spec.inputs:
                arr = g.inputs[spec.name]
                where = f"{g.id} input {spec.name} ({spec.role})"
                assert arr.shape == p.shape(spec.name, g.dims), where
                values = arr.astype(np.float64)
                assert np.isfinite(values).all(), where
                if spec.role in ("running_var", "positive"):
                    assert (values > 0).all(), where
                elif spec.role == "probability":
                    assert (values >= 0).all() and np.allclose(values.sum(-1), 1.0, atol=1e-3), where
                elif spec.role in ("label", "index"):
                    low = evaluate_expression(spec.low, g.dims) if spec.low is not None else 0
                    high = evaluate_expression(spec.high, g.dims)
                    assert ((values >= low) & (values < high)).all(), where
                elif spec.role == "mask":
                    assert set(np.unique(values)) <= {0.0, 1.0}, where


class TestReproducible:
    @pytest.mark.parametrize("generator", NEW)
    def test_same_id_same_arrays(self, generator):
        """generate_from_id rebuilds exactly the arrays of the id."""
        g = generate(load_problem("layernorm"), generator, preset="remainder", seed=5)
        again = generate_from_id(g.id)
        for name, arr in g.inputs.items():
            np.testing.assert_array_equal(arr, again.inputs[name])

    def test_malformed_id(self):
        """A malformed id says which form it should take."""
        with pytest.raises(ValueError, match="is not of the form 'problem:generator:preset:seed'"):
            parse_input_id("relu:normal:tiny")


class TestKernelBenchVerifiedScalings:
    def test_scaled_x3_scales_activations_not_parameters(self):
        """x3 of U[0, 1) activations; norm weights stay at 1, biases at 0."""
        g = generate(load_problem("layernorm"), "scaled_x3").inputs
        assert g["x"].min() >= 0 and 2.5 < g["x"].max() < 3.0
        assert np.all(g["weight"] == 1) and np.all(g["bias"] == 0)

    def test_scaled_x0_01_and_negated(self):
        """x0.01 stays below 0.01, negated is non-positive."""
        p = load_problem("relu")
        assert 0 <= generate(p, "scaled_x0_01").inputs["x"].min() and generate(p, "scaled_x0_01").inputs["x"].max() < 0.01
        assert generate(p, "negated").inputs["x"].max() <= 0


class TestStructure:
    def test_large_magnitude_is_large_and_sign_mixed(self):
        """N(0, 1) x 10^U(3, 4): magnitudes past 1e3, both signs."""
        x = generate(load_problem("sum_dim"), "large_magnitude").inputs["x"].astype(np.float64)
        assert np.abs(x).max() > 1e3 and x.min() < 0 < x.max()

    def test_large_magnitude_fits_float16(self):
        """On a float16 problem the values are clipped into the finite range."""
        assert np.isfinite(generate(load_problem("relu_fp16"), "large_magnitude").inputs["x"].astype(np.float64)).all()

    def test_peaked_logits(self):
        """One entry per row stands far above the rest."""
        x = np.sort(generate(load_problem("softmax"), "peaked_logits").inputs["x"], axis=-1)
        assert np.all(x[:, -1] - x[:, -2] > 15)

    def test_flat_logits(self):
        """Nearly constant rows."""
        x = generate(load_problem("softmax"), "flat_logits").inputs["x"]
        assert x.std() < 1e-2 and abs(x.mean() - 0.5) < 1e-2

    def test_tiny_variance_rows(self):
        """Each row is c + 1e-4 N(0, 1): tiny spread inside a row, different c across rows."""
        x = generate(load_problem("layernorm"), "tiny_variance").inputs["x"].astype(np.float64)
        assert np.all(x.std(axis=1) < 3e-4) and x.mean(axis=1).std() > 0.1

    def test_negative_heavy(self):
        """About 90 % negative."""
        x = generate(load_problem("relu"), "negative_heavy").inputs["x"]
        assert 0.85 < (x < 0).mean() < 0.95

    def test_sparse(self):
        """About 90 % zeros."""
        x = generate(load_problem("relu"), "sparse").inputs["x"]
        assert 0.85 < (x == 0).mean() < 0.95

    def test_one_hot(self):
        """One 1 per row, zeros elsewhere."""
        x = generate(load_problem("softmax"), "one_hot").inputs["x"]
        assert np.all(x.sum(axis=1) == 1) and np.all((x == 0) | (x == 1))

    def test_monotone(self):
        """Sorted ascending along the last dim (a scan's input)."""
        x = generate(load_problem("cumsum"), "monotone").inputs["x"]
        assert np.all(np.diff(x, axis=-1) >= 0)

    def test_boundary_index(self):
        """Labels are only the first and the last class, both present."""
        p = load_problem("cross_entropy")
        g = generate(p, "boundary_index")
        classes = g.dims["classes"]
        assert set(np.unique(g.inputs["labels"])) == {0, classes - 1}

    def test_structured_recipes_leave_parameters_alone(self):
        """Structure goes to data roles; layernorm's weight stays near 1 (perturbed, not shaped)."""
        w = generate(load_problem("layernorm"), "one_hot").inputs["weight"]
        assert 0.5 < w.mean() < 1.5 and len(np.unique(w)) > 1


class TestScaleInputs:
    def test_scales_data_keeps_norm_parameters(self):
        """scale_inputs multiplies activations, leaves weight and bias, and names the scale."""
        p = load_problem("layernorm")
        base = generate(p, "sign_mixed", preset="tiny")
        s = scale_inputs(p, base, 300)
        assert s.id == "layernorm:sign_mixed*300:tiny:0"
        np.testing.assert_allclose(s.inputs["x"], base.inputs["x"] * 300, rtol=1e-6)
        np.testing.assert_array_equal(s.inputs["weight"], base.inputs["weight"])
