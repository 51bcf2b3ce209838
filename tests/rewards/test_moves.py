"""Input moves (issue 31 item 2): named transforms a search composes, rebuilt from an input's id."""

import doctest

import numpy as np
import pytest

import mutagym.rewards.moves as moves_module
from mutagym.rewards.checker import InputRef
from mutagym.rewards.generators import explicit_dims, generate
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.moves import MOVES, make_input, split_moves
from mutagym.runtime.buffers import numpy_dtype
from mutagym.substrates.catalog import load_problem


def test_doctests():
    assert doctest.testmod(moves_module).failed == 0


@pytest.mark.parametrize("move", sorted(MOVES))
def test_every_move_rebuilds_from_its_id_and_keeps_constrained_roles(move):
    """cross_entropy has logits (free) and labels (constrained): a move changes only the logits,
    and the id rebuilds the same bytes."""
    p = load_problem("cross_entropy")
    g = make_input(p, f"normal~{move}", "official", 4)
    base = generate(p, "normal", preset="official", seed=4)
    again = generate_from_id(g.id)
    assert g.id == f"cross_entropy:normal~{move}:official:4"
    assert all(np.array_equal(g.inputs[k], again.inputs[k], equal_nan=True) for k in g.inputs)
    assert np.array_equal(g.inputs["labels"], base.inputs["labels"])


def test_moves_compose_in_order():
    p = load_problem("relu")
    a = make_input(p, "sign_mixed~offset_1e3~negate", "tiny", 0).inputs["x"]
    b = make_input(p, "sign_mixed~negate~offset_1e3", "tiny", 0).inputs["x"]
    assert not np.array_equal(a, b)


def test_an_unknown_move_is_named():
    with pytest.raises(ValueError, match=r"unknown move 'twist'"):
        split_moves("normal~twist")
    with pytest.raises(ValueError, match=r"unknown move 'twist'"):
        InputRef(generator="normal~twist")


class TestExplicitDims:
    def test_dims_outside_the_declared_range_are_named(self):
        with pytest.raises(ValueError, match=r"preset '=cols=0,rows=1'.*outside"):
            explicit_dims(load_problem("softmax"), "=cols=0,rows=1")

    def test_a_malformed_preset_is_named(self):
        with pytest.raises(ValueError, match=r"not of the form"):
            explicit_dims(load_problem("softmax"), "=cols")

    def test_an_explicit_preset_generates_those_dims(self):
        g = generate_from_id("softmax:normal:=cols=5,rows=3:2")
        assert g.dims == {"cols": 5, "rows": 3} and g.inputs["x"].shape == (3, 5)


@pytest.mark.parametrize("problem", ["softmax", "relu_fp16", "softmax_bf16"])
@pytest.mark.parametrize("name", ["top", "-root", "sub", "-sub"])
def test_a_band_puts_each_row_on_one_sign_within_2x_of_a_point_of_its_dtype_in_order(problem, name):
    """top: half the dtype's largest value; root: its square root; sub: a sixteenth of the
    smallest normal (subnormals), as float16 and bfloat16 hold them, not float32."""
    import ml_dtypes
    p = load_problem(problem)
    dtype = p.spec.inputs[0].dtype
    finfo = ml_dtypes.finfo(numpy_dtype(dtype))
    at = {"top": float(finfo.max) / 2, "root": float(finfo.max) ** 0.5, "sub": float(finfo.smallest_normal) / 16}[name.lstrip("-")]
    base = generate(p, "normal", preset="official", seed=1).inputs["x"].astype(np.float64)
    x = make_input(p, f"normal~band_{name}", "official", 1).inputs["x"].astype(np.float64)
    sign = -1.0 if name.startswith("-") else 1.0
    rounding = at * 2 ** -(finfo.nmant - 1) + float(finfo.smallest_subnormal)   # the dtype's rounding
    assert np.all(np.sign(x) == sign) and np.all(np.isfinite(x))
    assert np.all(np.abs(x) >= at / 2 - rounding) and np.all(np.abs(x) <= at * 2 + rounding)
    first, moved = base.reshape(-1, base.shape[-1])[0], x.reshape(-1, x.shape[-1])[0]
    assert np.all(np.diff(moved[np.argsort(first, kind="stable")]) >= 0)     # a row's order is kept


def test_signed_zeros_puts_both_zeros_in_every_long_row():
    x = make_input(load_problem("softmax"), "normal~signed_zeros", "official", 2).inputs["x"]
    for row in x:
        zeros = row[row == 0]
        assert np.signbit(zeros).any() and (~np.signbit(zeros)).any()
