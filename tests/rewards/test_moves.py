"""Input moves (issue 31 item 2): named transforms a search composes, rebuilt from an input's id."""

import doctest

import numpy as np
import pytest

import mutagym.rewards.moves as moves_module
from mutagym.rewards.checker import InputRef
from mutagym.rewards.generators import explicit_dims, generate
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.moves import MOVES, make_input, split_moves
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


@pytest.mark.parametrize("name", ["1e-40", "1e20", "-1e30", "1e38"])
def test_a_band_puts_each_row_on_one_sign_within_a_factor_2_of_its_magnitude_in_order(name):
    magnitude = float(name)
    p = load_problem("softmax")
    base = generate(p, "normal", preset="official", seed=1).inputs["x"].astype(np.float64)
    x = make_input(p, f"normal~band_{name}", "official", 1).inputs["x"].astype(np.float64)
    assert np.all(np.sign(x) == np.sign(magnitude)) and np.all(np.isfinite(x))
    rounding = abs(magnitude) * 1e-6 + 1.5e-45                  # float32's rounding, subnormals' spacing
    assert np.all(np.abs(x) >= abs(magnitude) / 2 - rounding) and np.all(np.abs(x) <= abs(magnitude) * 2 + rounding)
    order = np.argsort(base[0], kind="stable")
    assert np.all(np.diff(x[0][order]) >= 0)                    # a row's order is kept


def test_signed_zeros_puts_both_zeros_in_every_long_row():
    x = make_input(load_problem("softmax"), "normal~signed_zeros", "official", 2).inputs["x"]
    for row in x:
        zeros = row[row == 0]
        assert np.signbit(zeros).any() and (~np.signbit(zeros)).any()
