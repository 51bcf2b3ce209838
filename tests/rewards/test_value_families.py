"""Value families: each has the property it promises, honours every role, applies where it says
(and refuses elsewhere), and its ids round-trip."""

from __future__ import annotations

import numpy as np
import pytest

from mutagym.rewards.generators import (ALL_GENERATORS, FAMILIES, GENERATORS, HUNDREDS_STEP, NotApplicable,
                                        OVERFLOW_RANGE, TIE_GRID, families_for, generate, why_not)
from mutagym.rewards.moves import generate_from_id
from mutagym.substrates import list_problems, load_problem
from mutagym.substrates.schema import evaluate_expression


def _rows(arr: np.ndarray) -> np.ndarray:
    return arr.astype(np.float64).reshape(-1, arr.shape[-1])


def _family_inputs(pid: str, family: str, preset: str = "official", seed: int = 0) -> dict:
    return generate(load_problem(pid), family, preset=preset, seed=seed).inputs


class TestProperties:
    def test_masked_has_minus_inf_but_never_a_whole_row(self):
        logits = (("softmax", "x"), ("log_softmax", "x"), ("softmax_bf16", "x"), ("cross_entropy", "logits"))
        for pid, name in logits:
            for preset in ("official", "remainder", "tiny", "@odd", "@unit"):
                x = _rows(_family_inputs(pid, "masked", preset, seed=3)[name])
                assert np.isneginf(x).any() or x.shape[1] == 1, (pid, preset)
                assert np.isfinite(x).any(axis=1).all(), (pid, preset)      # never fully masked
                assert not np.isnan(x).any() and not np.isposinf(x).any()
            x = _rows(_family_inputs(pid, "masked")[name])
            assert np.isfinite(x[0]).sum() == 1                             # the first row: one survivor

    def test_masked_labels_pick_finite_logits(self):
        for seed in range(3):
            g = _family_inputs("cross_entropy", "masked", "remainder", seed)
            logits, labels = g["logits"], g["labels"]
            assert np.isfinite(logits[np.arange(len(labels)), labels]).all()

    def test_ties_repeat_each_rows_max_and_min(self):
        for pid, name in (("argmax_dim", "x"), ("argmin_dim", "x"), ("max_dim", "x"), ("softmax", "x")):
            x = _rows(_family_inputs(pid, "ties", "remainder")[name])
            assert set(np.unique(x)) <= set(TIE_GRID)
            assert ((x == x.max(axis=1, keepdims=True)).sum(axis=1) >= 2).all(), pid
            assert ((x == x.min(axis=1, keepdims=True)).sum(axis=1) >= 2).all(), pid
        x = _rows(_family_inputs("argmax_dim", "ties", "tiny")["x"])      # rows of 2: the max twice
        assert (x == 1.0).all()

    def test_integers_are_integer_valued(self):
        x = _family_inputs("sum_dim", "integers")["x"].astype(np.float64)
        assert np.array_equal(x, np.round(x)) and x.min() >= -8 and x.max() <= 8 and len(np.unique(x)) == 17

    def test_negative_rows_are_all_negative(self):
        x = _rows(_family_inputs("max_dim", "negative_rows", "remainder")["x"])
        assert (x[::2] < 0).all() and (x[1::2] > 0).any()
        assert (_family_inputs("relu", "negative_rows")["x"] < 0).all()   # one row: all of it

    def test_zero_rows_are_all_zero_but_not_every_row(self):
        for pid in ("l2_normalize", "layernorm", "frobenius_normalize", "cosine_similarity_loss"):
            p = load_problem(pid)
            g = generate(p, "zero_rows", preset="remainder", seed=1)
            x = _rows(g.inputs[p.inputs[0].name])
            assert (x[::3] == 0).all() and (x[1::3] != 0).any(axis=1).all(), pid
        x = _rows(_family_inputs("frobenius_normalize", "zero_rows", "@unit", 0)["x"])
        assert (x != 0).any()                                             # one row is never zeroed

    def test_overflow_goes_past_exp_overflow(self):
        for pid, name in (("softmax", "x"), ("cross_entropy", "logits"), ("softplus", "x"), ("sigmoid", "x")):
            x = _family_inputs(pid, "overflow")[name].astype(np.float64)
            assert (x > 88.7).any() and (x < -88.7).any() and np.abs(x).max() <= OVERFLOW_RANGE[1] + 1, pid
        x = _rows(_family_inputs("log_softmax", "overflow")["x"])
        assert (x[0] > 88.7).all()                                        # a row entirely past overflow

    def test_long_tail_rows_sum_to_one_with_one_large_mass(self):
        p = _rows(_family_inputs("kl_div", "long_tail", "remainder")["targets"])
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
        assert (p >= 0).all() and (p.max(axis=1) >= 0.6).all()
        second = np.sort(p, axis=1)[:, -2]
        assert (second < 0.4).all() and (p.min(axis=1) < 1e-6 * p.max(axis=1)).all()
        logits = _rows(_family_inputs("cross_entropy", "long_tail")["logits"])
        np.testing.assert_allclose(np.exp(logits).sum(axis=1), 1.0, atol=1e-4)

    def test_heavy_tailed_has_outliers(self):
        x = _family_inputs("sum_dim", "heavy_tailed", "@large")["x"].astype(np.float64)
        assert np.abs(x).max() > 100 and np.median(np.abs(x)) < 1.5

    def test_hundreds_in_half_precision(self):
        for pid in ("matmul_fp16", "rmsnorm_fp16", "softmax_bf16", "relu_fp16", "gelu_bf16"):
            p = load_problem(pid)
            g = generate(p, "hundreds", preset="remainder")
            x = g.inputs[p.inputs[0].name]
            assert x.dtype.name in ("float16", "bfloat16")
            values = x.astype(np.float64)
            assert np.abs(values).min() >= 96 and np.abs(values).max() <= 384 and (values < 0).any(), pid
            assert (values % HUNDREDS_STEP == 0).all(), pid                  # exact products in float32


class TestRoles:
    @pytest.mark.parametrize("family", list(FAMILIES))
    def test_roles_hold_wherever_the_family_applies(self, family):
        """Every problem the family applies to (tiny and remainder): right shapes and dtypes,
        finite values except masked logits, constrained roles kept."""
        for pid in list_problems():
            p = load_problem(pid)
            if why_not(p, family):
                continue
            for preset in ("tiny", "remainder"):
                g = generate(p, family, preset=preset, seed=2)
                for spec in p.spec.inputs:
                    arr = g.inputs[spec.name]
                    where = f"{g.id} {spec.name} ({spec.role})"
                    assert arr.shape == p.shape(spec.name, g.dims) and arr.dtype.name == spec.dtype, where
                    values = arr.astype(np.float64)
                    if family == "masked" and spec.role == "logits":
                        assert not np.isnan(values).any() and not np.isposinf(values).any(), where
                    else:
                        assert np.isfinite(values).all(), where
                    if spec.role in ("running_var", "positive"):
                        assert (values > 0).all(), where
                    elif spec.role == "probability":
                        assert (values >= 0).all() and np.allclose(values.sum(-1), 1.0, atol=1e-3), where
                    elif spec.role in ("label", "index"):
                        low = evaluate_expression(spec.low, g.dims) if spec.low is not None else 0
                        high = evaluate_expression(spec.high, g.dims)
                        assert ((values >= low) & (values < high)).all(), where

    @pytest.mark.parametrize("family", list(FAMILIES))
    def test_ids_round_trip(self, family):
        pid = next(p for p in ("cross_entropy", "softmax_bf16", "kl_div", "sigmoid")
                   if not why_not(load_problem(p), family))
        g = generate(load_problem(pid), family, preset="@mod4_2", seed=5)
        again = generate_from_id(g.id)
        for name, arr in g.inputs.items():
            np.testing.assert_array_equal(arr, again.inputs[name])


class TestApplicability:
    def test_families_are_apart_from_the_kill_matrix_generators(self):
        assert not set(FAMILIES) & set(GENERATORS) and ALL_GENERATORS == {**GENERATORS, **FAMILIES}

    def test_where_families_apply(self):
        fam = {pid: families_for(load_problem(pid)) for pid in (
            "relu", "sigmoid", "kl_div", "cross_entropy", "cumprod", "matmul_fp16", "matvec", "layernorm")}
        assert fam["relu"] == ["ties", "integers", "negative_rows", "heavy_tailed"]
        assert "overflow" in fam["sigmoid"] and "masked" not in fam["sigmoid"]
        assert fam["kl_div"] == ["long_tail"]                           # probabilities only: no data role
        assert {"masked", "overflow", "long_tail", "zero_rows"} <= set(fam["cross_entropy"])
        assert "ties" in fam["cumprod"]                                 # a grid of |v| <= 1 keeps products bounded
        assert "integers" not in fam["cumprod"] and "heavy_tailed" not in fam["cumprod"]
        assert "hundreds" in fam["matmul_fp16"] and "hundreds" not in fam["layernorm"]
        assert "zero_rows" not in fam["matvec"]                         # its only data input is a vector

    def test_a_family_that_does_not_apply_says_so(self):
        with pytest.raises(NotApplicable, match="no logits input"):
            generate(load_problem("relu"), "masked")
        assert "overflows where the fp64 product is finite" in why_not(load_problem("prod_dim"), "integers")
        assert why_not(load_problem("relu"), "normal") == ""

    def test_every_family_applies_somewhere_and_none_is_a_false_reject_control(self):
        """A family that broke correct kernels everywhere would be a control, not a gate family."""
        offered = {f for pid in list_problems() for f in families_for(load_problem(pid))}
        assert offered == set(FAMILIES)
        assert all("false_reject_control" not in g.targets for g in FAMILIES.values())
