"""The problem catalog: spec validation errors, loading every problem, the fp64 reference."""

from __future__ import annotations

import pickle
import re
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mutagym.substrates import (
    ROLES,
    Problem,
    ProblemSpecError,
    UnknownProblemError,
    catalog_dir,
    list_problems,
    load_problem,
)

PROBLEMS = list_problems()
NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
                "bfloat16": ml_dtypes.bfloat16, "int32": np.int32, "int64": np.int64,
                "uint8": np.uint8}


def make_inputs(problem: Problem, dims: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs that respect each input's role (positive, probability, label/index ranges, mask)."""
    rng = np.random.default_rng(seed)
    from mutagym.substrates.schema import evaluate_expression

    out = {}
    for t in problem.inputs:
        shape = problem.shape(t.name, dims)
        if t.role in ("label", "index"):
            low = evaluate_expression(t.low if t.low is not None else 0, dims)
            high = evaluate_expression(t.high, dims)
            arr = rng.integers(low, max(high, low + 1), size=shape)
        elif t.role == "mask":
            arr = rng.integers(0, 2, size=shape)
        elif t.role in ("positive", "running_var"):
            arr = np.abs(rng.standard_normal(shape)) + 0.1
        elif t.role == "probability":
            e = np.exp(rng.standard_normal(shape))
            arr = e / e.sum(axis=-1, keepdims=True)
        else:
            arr = rng.standard_normal(shape)
        out[t.name] = np.asarray(arr).astype(NUMPY_DTYPES[t.dtype])
    return out


# ---------------------------------------------------------------------------------------------
# malformed specs: each error names the file, the key path and the reason
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def copy_problem(tmp_path):
    """Copy a catalog problem into tmp_path; return its folder."""

    def copy(pid: str = "layernorm") -> Path:
        dst = tmp_path / pid
        shutil.copytree(catalog_dir() / pid, dst, ignore=shutil.ignore_patterns("__pycache__"))
        return dst

    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def spec_error(folder: Path) -> ProblemSpecError:
    with pytest.raises(ProblemSpecError) as info:
        load_problem(folder)
    return info.value


class TestSpecErrors:
    def test_missing_key(self, copy_problem):
        """A missing required key is reported at its key path."""
        folder = copy_problem()
        edit(folder / "problem.toml", 'role = "affine_scale"\n', "")
        err = spec_error(folder)
        assert err.path == str(folder / "problem.toml")
        assert ("inputs[1].role", "required key is missing") in err.errors
        assert re.search(r"problem\.toml: inputs\[1\]\.role: required key is missing", str(err))

    def test_unknown_key(self, copy_problem):
        """A misspelt key is an error with a suggestion, never silently ignored."""
        folder = copy_problem()
        edit(folder / "problem.toml", "rtol = 1e-2", "rtol = 1e-2\nmatched_ration = 0.9")
        err = spec_error(folder)
        assert err.path.endswith("problem.toml")
        [(key, reason)] = err.errors
        assert key == "tolerance.matched_ration"
        assert "unknown key 'matched_ration'; did you mean 'matched_ratio'?" in reason

    def test_unknown_role_suggests(self, copy_problem):
        """An unknown role names the role, the input and the known roles, with a suggestion."""
        folder = copy_problem()
        edit(folder / "problem.toml", 'role = "affine_scale"', 'role = "afine_scale"')
        err = spec_error(folder)
        [(key, reason)] = err.errors
        assert key == "inputs[1].role"
        assert "unknown role 'afine_scale' for input 'weight'; did you mean 'affine_scale'?" in reason
        assert all(role in reason for role in ROLES)

    def test_preset_outside_range(self, copy_problem):
        """A preset size outside its dim's range names the preset and the dim."""
        folder = copy_problem()
        edit(folder / "problem.toml", "remainder = { rows = 37, cols = 999 }",
             "remainder = { rows = 37, cols = 2000001 }")
        err = spec_error(folder)
        assert ("presets.remainder.cols",
                "2000001 is outside the range of dim 'cols' [1, 1048576]") in err.errors

    def test_large_reduction_required(self, copy_problem):
        """A problem with a reduction_dim needs a large_reduction preset."""
        folder = copy_problem()
        edit(folder / "problem.toml", "large_reduction = { rows = 2, cols = 262144 }\n", "")
        err = spec_error(folder)
        [(key, reason)] = err.errors
        assert key == "presets" and "missing preset 'large_reduction'" in reason
        assert "reduction_dim = 'cols'" in reason

    def test_large_reduction_too_small(self, copy_problem):
        folder = copy_problem()
        edit(folder / "problem.toml", "large_reduction = { rows = 2, cols = 262144 }",
             "large_reduction = { rows = 2, cols = 4096 }")
        err = spec_error(folder)
        assert err.errors[0][0] == "presets.large_reduction.cols"
        assert "below 262144" in err.errors[0][1]

    def test_missing_reference_function(self, copy_problem):
        folder = copy_problem()
        edit(folder / "reference.py", "def reference(", "def layer_norm_ref(")
        err = spec_error(folder)
        [(key, reason)] = err.errors
        assert err.path.endswith("problem.toml")
        assert key == "reference.function"
        assert "reference.py defines no function 'reference'" in reason

    def test_missing_reference_file(self, copy_problem):
        folder = copy_problem()
        (folder / "reference.py").unlink()
        err = spec_error(folder)
        assert err.errors == [("reference.function", f"reference.py does not exist in {folder}")]

    def test_missing_substrate_file(self, copy_problem):
        folder = copy_problem()
        (folder / "substrate.cu").unlink()
        err = spec_error(folder)
        assert err.errors == [("kernels.substrate",
                               f"file 'substrate.cu' does not exist in {folder}")]

    def test_all_errors_listed(self, copy_problem):
        """Several faults give one error that lists each, one line per fault."""
        folder = copy_problem()
        edit(folder / "problem.toml", 'role = "affine_scale"', 'role = "weights"')
        edit(folder / "problem.toml", "tiny = { rows = 3, cols = 2 }", "tiny = { rows = 3, cols = 5 }")
        edit(folder / "problem.toml", 'shape = ["cols"]', 'shape = ["colz"]')
        err = spec_error(folder)
        keys = [k for k, _ in err.errors]
        assert keys == ["presets.tiny.cols", "inputs[1].shape[0]", "inputs[1].role"]
        assert str(err).splitlines()[0].endswith("problem.toml: 3 errors")
        assert "'colz' is not a dim; did you mean 'cols'?" in str(err)

    def test_type_errors(self, copy_problem):
        folder = copy_problem()
        edit(folder / "problem.toml", 'dtype = "float32"\nrole = "activation"',
             'dtype = "float8"\nrole = "activation"')
        edit(folder / "problem.toml", "atol = 1e-2", "atol = -1e-2")
        err = spec_error(folder)
        keys = dict(err.errors)
        assert "inputs[0].dtype" in keys and "'float32'" in keys["inputs[0].dtype"]
        assert "tolerance.atol" in keys and "greater than or equal to 0" in keys["tolerance.atol"]

    def test_id_must_equal_folder(self, copy_problem, tmp_path):
        folder = copy_problem()
        moved = folder.rename(tmp_path / "layernorm2")
        err = spec_error(moved)
        assert ("id", "'layernorm' must equal the folder name 'layernorm2'") in err.errors

    def test_official_preset_matches_dims(self, copy_problem):
        folder = copy_problem()
        edit(folder / "problem.toml", "official = { rows = 64, cols = 1024 }",
             "official = { rows = 64, cols = 512 }")
        err = spec_error(folder)
        assert err.errors == [("presets.official.cols", "512 differs from dims.cols.official = 1024")]

    def test_remainder_and_tiny_rules(self, copy_problem):
        folder = copy_problem("relu")
        edit(folder / "problem.toml", "remainder = { n = 50021 }", "remainder = { n = 4096 }")
        edit(folder / "problem.toml", "tiny = { n = 3 }", "tiny = { n = 4 }")
        keys = [k for k, _ in spec_error(folder).errors]
        assert keys == ["presets.remainder", "presets.tiny.n"]

    def test_integer_role_needs_high(self, copy_problem):
        folder = copy_problem("relu")
        edit(folder / "problem.toml", 'dtype = "float32"\nrole = "activation"',
             'dtype = "int64"\nrole = "label"')
        err = spec_error(folder)
        assert [k for k, _ in err.errors] == ["inputs[0].high"]
        edit(folder / "problem.toml", 'role = "label"', 'role = "label"\nhigh = "n + classes"')
        err = spec_error(folder)
        assert err.errors[0][0] == "inputs[0].high" and "'classes'" in err.errors[0][1]
        edit(folder / "problem.toml", 'high = "n + classes"', 'high = "n + 1"')
        assert load_problem(folder).inputs[0].high == "n + 1"

    def test_invalid_toml(self, copy_problem):
        folder = copy_problem("relu")
        edit(folder / "problem.toml", 'title = "ReLU"', 'title = "ReLU')
        err = spec_error(folder)
        assert err.path.endswith("problem.toml") and "not valid TOML" in str(err)

    def test_reference_that_raises_names_problem(self, copy_problem):
        folder = copy_problem("relu")
        edit(folder / "reference.py", "return torch.relu(x)", "raise RuntimeError('boom')")
        problem = load_problem(folder)
        with pytest.raises(ProblemSpecError, match=r"reference of problem 'relu' raised RuntimeError: boom"):
            problem.reference_outputs({"x": np.zeros(4, np.float32)})

    def test_reference_wrong_shape(self, copy_problem):
        folder = copy_problem("relu")
        edit(folder / "reference.py", "return torch.relu(x)", "return torch.relu(x)[:-1]")
        problem = load_problem(folder)
        with pytest.raises(ProblemSpecError, match=r"returned shape \(3,\) for output 'out'; the spec says \(4,\)"):
            problem.reference_outputs({"x": np.zeros(4, np.float32)})


# ---------------------------------------------------------------------------------------------
# the catalog as shipped
# ---------------------------------------------------------------------------------------------

def test_list_problems_sorted():
    assert PROBLEMS == sorted(PROBLEMS)
    assert {"relu", "layernorm", "rmsnorm"} <= set(PROBLEMS)


def test_unknown_problem_suggests():
    with pytest.raises(UnknownProblemError, match=r"unknown problem 'rmsnrom'; did you mean 'rmsnorm'\?"):
        load_problem("rmsnrom")


@pytest.mark.parametrize("pid", PROBLEMS)
def test_problem_loads(pid):
    problem = load_problem(pid)
    assert problem.id == pid
    assert load_problem(pid) is problem  # cached
    sources = problem.kernel_sources()
    assert list(sources)[0] == "substrate"
    assert all(text.lstrip().startswith("/* mutagym") for text in sources.values())
    if problem.reduction_dim:
        assert problem.spec.kernels.variants, "a problem with a reduction needs a variant"
    assert "def " in problem.reference_source()


@pytest.mark.parametrize("pid", PROBLEMS)
def test_reference_shapes(pid):
    """The reference returns the declared shape and float64 (int64) for the small presets."""
    problem = load_problem(pid)
    for preset in ("tiny", "remainder"):
        dims = problem.preset(preset)
        outputs = problem.reference_outputs(make_inputs(problem, dims))
        specs = problem.output_specs(dims)
        assert list(outputs) == list(specs)
        for name, (shape, dtype) in specs.items():
            assert outputs[name].shape == shape, (preset, name)
            want = np.float64 if dtype.startswith(("float", "bfloat")) else np.int64
            assert outputs[name].dtype == want, (preset, name)


def test_reference_bits_do_not_depend_on_torch_threads():
    """A reference is the same bits whatever torch's thread count (a 2-thread mean of 16k
    elements sums in another order than a 1-thread one), and the caller's count is left alone."""
    import hashlib

    import torch

    from mutagym.rewards.generators import generate

    problem = load_problem("mse_loss")
    g = generate(problem, "affine_perturbed", preset="official")
    before = torch.get_num_threads()
    digests = []
    try:
        for threads in (2, 1):
            torch.set_num_threads(threads)
            out = problem.reference_outputs(g.inputs)
            digests.append(hashlib.sha256(out["out"].tobytes()).hexdigest())
            assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    assert digests[0] == digests[1]


CANONICAL = {
    "relu": (["x"], ["out"], ["n"], []),
    "softmax": (["x"], ["out"], ["rows", "cols"], []),
    "layernorm": (["x", "weight", "bias"], ["out"], ["rows", "cols"], ["eps"]),
    "rmsnorm": (["x", "weight"], ["out"], ["rows", "cols"], ["eps"]),
}


@pytest.mark.parametrize("pid", sorted(CANONICAL))
def test_canonical_names(pid):
    """The names docs/ and the tests use."""
    if pid not in PROBLEMS:
        pytest.skip(f"{pid} is not in the catalog yet")
    problem = load_problem(pid)
    inputs, outputs, dims, scalars = CANONICAL[pid]
    assert [t.name for t in problem.inputs] == inputs
    assert [t.name for t in problem.outputs] == outputs
    assert list(problem.dims) == dims
    assert list(problem.scalars) == scalars
    if pid == "layernorm":
        assert problem.scalar_values() == {"eps": 1e-5}
        assert [t.role for t in problem.inputs] == ["activation", "affine_scale", "affine_shift"]


class TestProblemApi:
    def test_shapes_and_presets(self):
        ln = load_problem("layernorm")
        assert ln.preset("large_reduction") == {"rows": 2, "cols": 262144}
        assert ln.shape("x", {"rows": 3, "cols": 5}) == (3, 5)
        assert ln.shape("bias", "tiny") == (2,)
        assert ln.output_specs({"rows": 3, "cols": 5}) == {"out": ((3, 5), "float32")}
        with pytest.raises(KeyError, match=r"no preset 'offical'; did you mean 'official'\?"):
            ln.preset("offical")
        with pytest.raises(ValueError, match=r"dim 'cols' = 0 is outside \[1, 1048576\]"):
            ln.check_dims({"rows": 1, "cols": 0})

    def test_kernel_sources_keys(self):
        assert list(load_problem("layernorm").kernel_sources()) == [
            "substrate", "variant_welford", "variant_twopass"]

    def test_reference_matches_formula(self):
        ln = load_problem("layernorm")
        x = np.random.default_rng(1).standard_normal((4, 9)).astype(np.float32)
        w = np.linspace(0.5, 1.5, 9, dtype=np.float32)
        b = np.linspace(-1, 1, 9, dtype=np.float32)
        out = ln.reference_outputs({"x": x, "weight": w, "bias": b})["out"]
        x64 = x.astype(np.float64)
        mean = x64.mean(-1, keepdims=True)
        want = (x64 - mean) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * w + b
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        out_eps = ln.reference_outputs({"x": x, "weight": w, "bias": b}, {"eps": 0.5})["out"]
        assert not np.allclose(out_eps, out)

    def test_half_inputs_cast_up(self):
        x16 = np.array([-1.5, 0.0, 2.25], dtype=np.float16)
        assert load_problem("relu_fp16").reference_outputs({"x": x16})["out"].tolist() == [0.0, 0.0, 2.25]
        xb = np.array([-3.0, 1.0], dtype=ml_dtypes.bfloat16)
        out = load_problem("gelu_bf16").reference_outputs({"x": xb})["out"]
        assert out.dtype == np.float64 and abs(out[1] - 0.8413447460685429) < 1e-12

    def test_bad_inputs_are_named(self):
        ln = load_problem("layernorm")
        with pytest.raises(ValueError, match=r"missing \['bias'\]"):
            ln.reference_outputs({"x": np.zeros((2, 3)), "weight": np.zeros(3)})
        with pytest.raises(ValueError, match=r"input 'weight' gives dim 'cols' = 4"):
            ln.reference_outputs({"x": np.zeros((2, 3)), "weight": np.zeros(4), "bias": np.zeros(3)})

    def test_pickle_round_trip(self):
        ln = load_problem("layernorm")
        assert pickle.loads(pickle.dumps(ln)) is ln
        err = ProblemSpecError("a/problem.toml", [("inputs[0].role", "bad")])
        assert str(pickle.loads(pickle.dumps(err))) == str(err)
