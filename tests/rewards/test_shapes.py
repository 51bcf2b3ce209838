"""Shape classes: deterministic draws inside each dim's range and the budget, every promised class
reachable and recognised, `@<class>` presets in input ids, and existing ids unchanged."""

from __future__ import annotations

import doctest
import hashlib

import numpy as np
import pytest

from mutagym.rewards import shapes as shapes_module
from mutagym.rewards.generators import GENERATORS, generate
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.shapes import (BLOCK_SIZES, LONG_LOOP, ROW_LIMIT, SHAPE_CLASSES, budget, classify, cost,
                                    draw_dims, main_dim, shape_classes, within_budget)
from mutagym.substrates import list_problems, load_problem

PROBLEMS = list_problems()

#: sha256 (first 16 hex digits) of each id's arrays, computed before shape classes and value
#: families were added: an existing id must keep its arrays.
PINNED = {
    "relu:normal:official:0": "2996cc4f4791fad9",
    "layernorm:affine_perturbed:tiny:3": "ebbaa0a188cc703c",
    "softmax:peaked_logits:remainder:2": "f2040ff530c29617",
    "cross_entropy:boundary_index:official:1": "f86c085e5737be77",
    "matmul_fp16:large_magnitude:tiny:0": "a87e99952d2bfa30",
    "gelu_bf16:sign_mixed:remainder:5": "e6b69cac1adb3aac",
    "kl_div:normal:remainder:0": "57924fef7d7a6633",
    "groupnorm:tiny_variance:official:4": "fb7155c0ac5b19ea",
    "cumsum:monotone:large_reduction:0": "8fe57adb8c1df426",
    "batchnorm:uniform01:remainder:7": "a62d840ea8a5aa21",
    "relu:sign_mixed*300:tiny:0": "a944b870b77a4740",
}


def _digest(inputs: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(inputs):
        a = inputs[name]
        h.update(name.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def test_docstrings_run():
    assert doctest.testmod(shapes_module).failed == 0


@pytest.mark.parametrize("input_id", sorted(PINNED))
def test_existing_ids_give_the_same_arrays(input_id):
    """Adding shape classes and families leaves every existing id's arrays as they were."""
    assert _digest(generate_from_id(input_id).inputs) == PINNED[input_id]


def test_the_kill_matrix_generators_are_the_eighteen():
    """The kill matrix's candidate set (every GENERATORS entry) is unchanged: families live apart."""
    assert list(GENERATORS) == [
        "uniform01", "normal", "sign_mixed", "scaled_x3", "scaled_x0_01", "negated", "identity_affine",
        "affine_perturbed", "large_magnitude", "large_offset", "peaked_logits", "flat_logits",
        "tiny_variance", "negative_heavy", "sparse", "one_hot", "monotone", "boundary_index"]


class TestDraws:
    @pytest.mark.parametrize("pid", PROBLEMS)
    def test_every_offered_class_is_reachable_recognised_and_within_budget(self, pid):
        """Each class the problem offers draws, on several seeds, dims inside every range and the
        budget that `classify` puts in that class, the same dims for the same seed."""
        p = load_problem(pid)
        for cls in shape_classes(p):
            for seed in (0, 1, 7):
                dims = draw_dims(p, cls, seed)
                assert set(dims) == set(p.dims), (pid, cls)
                for name, d in p.dims.items():
                    assert d.min <= dims[name] <= d.max, (pid, cls, seed, name, dims)
                c, b = cost(p, dims), budget(p)
                assert c.elements <= b.elements and c.work <= b.work and c.rows <= b.rows, (pid, cls, dims)
                assert cls in classify(p, dims), (pid, cls, seed, dims)
                assert draw_dims(p, cls, seed) == dims

    def test_seeds_vary_the_draw(self):
        p = load_problem("softmax")
        assert len({tuple(draw_dims(p, "mod4_2", s).items()) for s in range(10)}) > 5

    def test_residues_and_block_edges(self):
        p = load_problem("layernorm")
        for seed in range(5):
            assert draw_dims(p, "mod4_2", seed)["cols"] % 4 == 2
            assert draw_dims(p, "mod8_6", seed)["cols"] % 8 == 6
            assert draw_dims(p, "odd", seed)["cols"] % 2 == 1
            assert draw_dims(p, "mod32", seed)["cols"] % 32 != 0
            for b in BLOCK_SIZES:
                past = draw_dims(p, f"past_{b}", seed)["cols"]
                below = draw_dims(p, f"below_{b}", seed)["cols"]
                assert past % b == 1 and past > b and below % b == b - 1

    def test_residue_reaches_the_contiguous_dims(self):
        """matmul_rect's b is (k, n): the n % 4 == 2 tail is probed along n as well as k."""
        p = load_problem("matmul_rect")
        dims = [draw_dims(p, "mod4_2", s) for s in range(8)]
        assert all(d["k"] % 4 == 2 for d in dims)
        assert sum(d["n"] % 4 == 2 for d in dims) >= 6

    def test_widths(self):
        p = load_problem("softmax")
        for seed in range(5):
            assert 1024 < draw_dims(p, "beyond_block", seed)["cols"] <= 4096
            assert 4096 < draw_dims(p, "wide", seed)["cols"] <= 65536

    def test_many_rows_goes_past_a_capped_grid(self):
        """Rows > 65,535 where the range and budget allow: sum_dim's rows, matmul_rect's m * n."""
        for pid in ("sum_dim", "cumsum", "argmax_dim", "rmsnorm", "batchnorm", "matmul_rect"):
            p = load_problem(pid)
            for seed in range(3):
                dims = draw_dims(p, "many_rows", seed)
                assert cost(p, dims).rows >= ROW_LIMIT > 65535, (pid, dims)
        assert draw_dims(load_problem("sum_dim"), "many_rows", 0)["rows"] == 65536

    def test_long_loop_reaches_two_to_the_twenty(self):
        for pid, dim in (("relu", "n"), ("sum_dim", "cols"), ("matmul_rect", "k"), ("matvec", "k")):
            p = load_problem(pid)
            assert main_dim(p) == dim
            assert all(draw_dims(p, "long_loop", s)[dim] >= LONG_LOOP for s in range(3)), pid
        assert draw_dims(load_problem("matmul_rect"), "long_loop", 0)["m"] == 1

    def test_large_fills_the_element_budget(self):
        for pid in ("relu", "softmax", "conv2d", "matmul_fp16"):
            p = load_problem(pid)
            for seed in range(3):
                assert cost(p, draw_dims(p, "large", seed)).elements >= budget(p).elements // 4, pid

    def test_tiny_unit_and_all_ge2(self):
        p = load_problem("groupnorm")
        for seed in range(5):
            assert all(v <= 3 for v in draw_dims(p, "tiny", seed).values())
            assert 1 in draw_dims(p, "unit", seed).values()
            assert draw_dims(p, "all_ge2", seed)["group_channels"] >= 2   # several channels per group

    def test_unreachable_classes_are_not_offered(self):
        """relu has no rows; prod_dim's cols stop at 256; kl_div's batch at 4096; softmax's correct
        kernels take longer than the target at 65,536 rows; instancenorm's spatial starts at 2."""
        assert "many_rows" not in shape_classes(load_problem("relu"))
        assert "beyond_block" not in shape_classes(load_problem("prod_dim"))
        assert "many_rows" not in shape_classes(load_problem("kl_div"))
        assert "many_rows" not in shape_classes(load_problem("softmax"))
        with pytest.raises(KeyError, match="no shape class 'many_rows'"):
            draw_dims(load_problem("relu"), "many_rows", 0)
        assert "tiny" in shape_classes(load_problem("instancenorm"))
        instancenorm = load_problem("instancenorm")
        assert all(draw_dims(instancenorm, "unit", s)["spatial"] >= 2 for s in range(5))

    def test_every_class_is_offered_somewhere(self):
        offered = {c for pid in PROBLEMS for c in shape_classes(load_problem(pid))}
        assert offered == set(SHAPE_CLASSES)


class TestBudget:
    def test_cost_counts_elements_work_and_rows(self):
        p = load_problem("conv1d")
        c = cost(p, {"batch": 2, "in_ch": 3, "out_ch": 5, "out_len": 10, "ksize": 3})
        assert c.elements == 2 * 5 * 10          # out (2, 5, 10) is larger than x (2, 3, 12)
        assert c.work == 2 * 3 * 5 * 128 * 3     # out_len rounded up to the substrate's 128-thread tile
        assert c.rows == 2 * 5

    def test_within_budget_checks_ranges_and_cost(self):
        p = load_problem("softmax")
        assert within_budget(p, {"rows": 64, "cols": 1024})
        assert not within_budget(p, {"rows": 65536, "cols": 1})       # rows over softmax's 32768
        assert not within_budget(p, {"rows": 4096, "cols": 4096})     # 16M elements
        assert not within_budget(p, {"rows": 0, "cols": 4})


class TestPresets:
    def test_class_preset_round_trips_through_its_id(self):
        g = generate(load_problem("relu"), "normal", preset="@mod4_2", seed=17)
        assert g.id == "relu:normal:@mod4_2:17" and g.preset == "@mod4_2"
        assert g.dims == draw_dims(load_problem("relu"), "mod4_2", 17) and g.dims["n"] % 4 == 2
        again = generate_from_id(g.id)
        np.testing.assert_array_equal(again.inputs["x"], g.inputs["x"])

    def test_same_class_same_dims_across_generators(self):
        """The draw depends on (problem, class, seed) only: families meet the same shapes."""
        p = load_problem("layernorm")
        normal = generate(p, "normal", preset="@past_256", seed=3)
        assert normal.dims == generate(p, "ties", preset="@past_256", seed=3).dims

    def test_plain_presets_still_work_and_unknown_class_is_a_key_error(self):
        assert generate(load_problem("relu"), "normal", preset="tiny").dims == {"n": 3}
        with pytest.raises(KeyError, match="no shape class"):
            generate(load_problem("relu"), "normal", preset="@nonsense", seed=0)
