"""Tests for `mutagym.runtime.plan`: resolving a parsed submission against one run. Every
refusal pins its wording: the launch, the `args` entry, the value and what was expected."""

from __future__ import annotations

import pickle
import struct

import ml_dtypes
import numpy as np
import pytest

from mutagym.runtime.errors import LaunchError
from mutagym.runtime.plan import (
    MAX_DYNAMIC_SHARED_BYTES,
    BufferSpec,
    resolve_plan,
)
from mutagym.runtime.submission import parse_submission

LAYERNORM = '''/* mutagym
[[launch]]
kernel = "layernorm_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
extern "C" __global__ void layernorm_rows(const float* x, const float* weight, const float* bias,
                                          float* out, int rows, int cols, float eps) {}
'''

TWO_PASS = '''/* mutagym
[[launch]]
kernel = "row_partials"
grid = ["rows", "ceil_div(cols, 256)"]
block = [256]
shared_bytes = "256 * 4"
args = ["x", "partial", "rows", "cols"]

[[launch]]
kernel = "row_finish"
grid = ["(rows + 127) // 128"]
block = [128]
args = ["partial", "out", "rows", "cols"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "rows * ceil_div(cols, 256)"
init = "zero"
*/
extern "C" __global__ void row_partials(const float* x, float* partial, int rows, int cols) {}
extern "C" __global__ void row_finish(const float* partial, float* out, int rows, int cols) {}
'''


def layernorm_plan(rows: int = 4, cols: int = 64, eps: float = 1e-5, x_dtype=np.float32):
    return resolve_plan(parse_submission(LAYERNORM),
                        {"x": np.zeros((rows, cols), x_dtype), "weight": np.ones(cols, np.float32),
                         "bias": np.zeros(cols, np.float32)},
                        {"out": ((rows, cols), "float32")}, {"rows": rows, "cols": cols},
                        {"eps": eps})


def one_kernel(params: str, args: list[str], *, grid: str = "[1]", block: str = "[1]",
               extra: str = "") -> str:
    """A submission with one kernel `k(params)` launched with *args*."""
    quoted = ", ".join(f'"{a}"' for a in args)
    return (f'/* mutagym\n[[launch]]\nkernel = "k"\ngrid = {grid}\nblock = {block}\n'
            f'args = [{quoted}]\n{extra}*/\nextern "C" __global__ void k({params}) {{}}\n')


def launch_error(match: str):
    """Expect a LaunchError whose message matches *match*."""
    return pytest.raises(LaunchError, match=match)


def resolve(source: str, inputs=None, outputs=None, dims=None, scalars=None):
    return resolve_plan(parse_submission(source), inputs or {}, outputs or {}, dims or {},
                        scalars or {})


class TestGoodPlans:
    def test_layernorm(self):
        """The LayerNorm plan (the design's worked example): three inputs, one poisoned output, packed values."""
        plan = layernorm_plan(rows=4, cols=64, eps=1e-5)
        assert plan.buffers == (
            BufferSpec("x", "input", "float32", (4, 64), 1024, "data"),
            BufferSpec("weight", "input", "float32", (64,), 256, "data"),
            BufferSpec("bias", "input", "float32", (64,), 256, "data"),
            BufferSpec("out", "output", "float32", (4, 64), 1024, "poison"),
        )
        (launch,) = plan.launches
        assert (launch.index, launch.kernel, launch.grid, launch.block, launch.shared_bytes) == (
            0, "layernorm_rows", (4, 1, 1), (256, 1, 1), 0)
        kinds = [(a.param.name, a.kind, a.buffer) for a in launch.args]
        assert kinds == [("x", "buffer", "x"), ("weight", "buffer", "weight"),
                         ("bias", "buffer", "bias"), ("out", "buffer", "out"),
                         ("rows", "value", None), ("cols", "value", None), ("eps", "value", None)]
        assert [a.value for a in launch.args[:4]] == [b""] * 4
        assert launch.args[4].value == (4).to_bytes(4, "little")
        assert launch.args[5].value == (64).to_bytes(4, "little")
        assert launch.args[6].value == struct.pack("<f", 1e-5)

    def test_two_launches_with_scratch(self):
        """Scratch size and launch shapes come from expressions over dims."""
        plan = resolve(TWO_PASS, {"x": np.zeros((300, 1000), np.float32)},
                       {"out": ((300,), "float32")}, {"rows": 300, "cols": 1000})
        assert plan.buffers[-1] == BufferSpec("partial", "scratch", "float32", (1200,), 4800,
                                              "zero")
        assert [b.role for b in plan.buffers] == ["input", "output", "scratch"]
        first, second = plan.launches
        assert (first.grid, first.block, first.shared_bytes) == ((300, 4, 1), (256, 1, 1), 1024)
        assert (second.index, second.grid, second.block) == (1, (3, 1, 1), (128, 1, 1))
        assert second.args[0].buffer == "partial" and second.args[1].buffer == "out"
        assert plan.buffer_index("partial") == 2 and plan.buffer_index("x") == 0

    def test_buffer_index_unknown(self):
        with pytest.raises(KeyError, match=r"no buffer 'wieght' \(did you mean 'weight'\?\)"):
            layernorm_plan().buffer_index("wieght")

    def test_integral_scalar_in_an_expression(self):
        """A scalar with an integral value may size a launch, like a dim."""
        source = one_kernel("float* out, int n", ["out", "n"], grid='["ceil_div(n, chunk)"]')
        plan = resolve(source, outputs={"out": ((10,), "float32")}, dims={"n": 10},
                       scalars={"chunk": 4.0})
        assert plan.launches[0].grid == (3, 1, 1)

    def test_const_mismatches_are_allowed(self):
        """An output may feed a const parameter and an input a non-const one; writes to inputs
        are caught when the kernel runs."""
        source = one_kernel("float* a, const float* b", ["x", "out"])
        plan = resolve(source, {"x": np.zeros(4, np.float32)}, {"out": ((4,), "float32")})
        assert [a.buffer for a in plan.launches[0].args] == ["x", "out"]

    def test_vector_parameter_takes_its_component_dtype(self):
        source = one_kernel("const float4* x, __half2* out", ["x", "out"])
        plan = resolve(source, {"x": np.zeros(8, np.float32)}, {"out": ((8,), "float16")})
        assert [a.param.vector_width for a in plan.launches[0].args] == [4, 2]

    def test_bfloat16_buffers(self):
        source = one_kernel("const __nv_bfloat16* x, __nv_bfloat16* out", ["x", "out"])
        plan = resolve(source, {"x": np.zeros(8, ml_dtypes.bfloat16)}, {"out": ((8,), "bfloat16")})
        assert [(b.dtype, b.nbytes) for b in plan.buffers] == [("bfloat16", 16), ("bfloat16", 16)]

    def test_numpy_scalars_and_dims(self):
        plan = layernorm_plan(rows=np.int64(2), cols=np.int32(8), eps=np.float32(0.5))
        assert plan.launches[0].args[6].value == struct.pack("<f", 0.5)

    def test_plan_pickles(self):
        plan = layernorm_plan()
        assert pickle.loads(pickle.dumps(plan)) == plan


class TestValuePacking:
    @pytest.mark.parametrize("ctype, value, packed", [
        ("int", -2, struct.pack("<i", -2)), ("unsigned int", 2**32 - 1, b"\xff" * 4),
        ("long long", -(2**63), struct.pack("<q", -(2**63))), ("size_t", 2**64 - 1, b"\xff" * 8),
        ("short", -3, struct.pack("<h", -3)), ("unsigned short", 65535, b"\xff\xff"),
        ("signed char", -128, b"\x80"), ("unsigned char", 255, b"\xff"),
        ("bool", 1, b"\x01"), ("bool", 0.0, b"\x00"), ("float", 0.1, struct.pack("<f", 0.1)),
        ("double", 0.1, struct.pack("<d", 0.1)), ("float", 3, struct.pack("<f", 3.0)),
        ("int", 7.0, struct.pack("<i", 7)),
        ("float", float("inf"), struct.pack("<f", float("inf"))),
    ])
    def test_little_endian_bytes(self, ctype, value, packed):
        plan = resolve(one_kernel(f"{ctype} v", ["v"]), scalars={"v": value})
        assert plan.launches[0].args[0].value == packed

    @pytest.mark.parametrize("ctype, value, reason", [
        ("int", 0.5, r"0\.5 is not an integer"),
        ("int", 2**31, r"2147483648 is out of range \(-2147483648 to 2147483647\)"),
        ("unsigned int", -1, r"-1 is out of range \(0 to 4294967295\)"),
        ("unsigned char", 256, r"256 is out of range \(0 to 255\)"),
        ("bool", 2, r"2 is out of range \(0 to 1\)"),
        ("int", float("nan"), r"nan is not an integer"),
        ("float", 1e39, r"1e\+39 is out of range for float32"),
    ])
    def test_lossy_values_are_refused(self, ctype, value, reason):
        with launch_error(rf"^line 2, args\[0\]: arg 'v' of launch 0 is scalar "
                          rf"'v' = .* but parameter 'v' of kernel 'k' is "
                          rf"{ctype}: {reason}$"):
            resolve(one_kernel(f"{ctype} v", ["v"]), scalars={"v": value})

    def test_dim_out_of_range(self):
        with launch_error(r"arg 'n' of launch 0 is dim 'n' = 70000 but "
                          r"parameter 'n' of kernel 'k' is short: 70000 is out "
                          r"of range \(-32768 to 32767\)"):
            resolve(one_kernel("short n", ["n"]), dims={"n": 70000})

    @pytest.mark.parametrize("ctype", ["__half2", "float2", "int4"])
    def test_unsupported_value_types(self, ctype):
        with launch_error(rf"^line 2, args\[0\]: parameter 'v' of kernel 'k' is "
                          rf"a value of type {ctype}, which mutagym cannot "
                          r"pass; take its components as scalars"):
            resolve(one_kernel(f"{ctype} v", ["v"]), scalars={"v": 1.0})


class TestArgBinding:
    def test_buffer_for_a_value_parameter(self):
        source = one_kernel("float* x, int n", ["x", "x"])
        with launch_error(r"^line 2, args\[1\]: arg 'x' of launch 0 is buffer "
                          r"'x' \(float32\) but parameter 'n' of kernel 'k' is "
                          r"a value int$"):
            resolve(source, {"x": np.zeros(4, np.float32)})

    def test_dim_for_a_pointer_parameter(self):
        source = one_kernel("float* x, int n", ["n", "n"])
        with launch_error(r"^line 2, args\[0\]: arg 'n' of launch 0 is dim "
                          r"'n' = 4 but parameter 'x' of kernel 'k' is a "
                          r"pointer float\*; pointers take inputs, outputs, "
                          r"scratch buffers, 'buffer \+ elements' or NULL$"):
            resolve(source, dims={"n": 4})

    def test_scalar_for_a_pointer_parameter(self):
        with launch_error(r"arg 'eps' of launch 0 is scalar 'eps' = 1e-05 but "
                          r"parameter 'x' of kernel 'k' is a pointer float\*"):
            resolve(one_kernel("float* x", ["eps"]), scalars={"eps": 1e-5})

    def test_dtype_mismatch(self):
        with launch_error(r"^line 2, args\[0\]: arg 'x' of launch 0 is buffer "
                          r"'x' \(float64\) but parameter 'x' of kernel "
                          r"'layernorm_rows' is const float\* \(float32\)$"):
            layernorm_plan(x_dtype=np.float64)

    def test_vector_dtype_mismatch(self):
        with launch_error(r"buffer 'x' \(float64\) but parameter 'x' of kernel "
                          r"'k' is const float4\* \(float32 x4\)$"):
            resolve(one_kernel("const float4* x", ["x"]), {"x": np.zeros(8, np.float64)})

    def test_bfloat16_parameter_needs_a_bfloat16_array(self):
        with launch_error(r"buffer 'x' \(uint16\) but parameter 'x' of kernel "
                          r"'k' is __nv_bfloat16\* \(bfloat16\)$"):
            resolve(one_kernel("__nv_bfloat16* x", ["x"]), {"x": np.zeros(8, np.uint16)})

    def test_unknown_arg(self):
        source = LAYERNORM.replace('"weight", "bias"', '"wieght", "bias"')
        with launch_error(r"^line 2, args\[1\]: arg 'wieght' of launch 0 names "
                          r"no input, output, scratch buffer, dim or scalar "
                          r"\(did you mean 'weight'\?\); known inputs: 'x', "
                          r"'weight', 'bias'; outputs: 'out'; dims: 'rows', "
                          r"'cols'; scalars: 'eps'$"):
            resolve(source, {"x": np.zeros((1, 2), np.float32), "weight": np.ones(2, np.float32),
                             "bias": np.zeros(2, np.float32)}, {"out": ((1, 2), "float32")},
                    {"rows": 1, "cols": 2}, {"eps": 1e-5})

    def test_name_clash(self):
        with launch_error(r"^name 'n': name 'n' is both an input and a dim; "
                          r"inputs, outputs, scratch buffers, dims and scalars "
                          r"need distinct names$"):
            resolve(one_kernel("float* n", ["n"]), {"n": np.zeros(1, np.float32)}, dims={"n": 1})

    def test_scratch_name_clash(self):
        extra = '[[scratch]]\nname = "out"\ndtype = "float32"\nsize = 4\n'
        with launch_error(r"name 'out' is both an output and a scratch buffer"):
            resolve(one_kernel("float* out", ["out"], extra=extra),
                    outputs={"out": ((4,), "float32")})


class TestLaunchLimits:
    def test_block_from_a_dim(self):
        source = one_kernel("int t", ["t"], block='["t"]')
        with launch_error(r"^line 2, launch 0 \(k\): block\[0\] = 't' evaluates "
                          r"to 2048; CUDA allows 1 to 1024 in block x$"):
            resolve(source, dims={"t": 2048})

    def test_block_product_from_dims(self):
        source = one_kernel("int t", ["t"], block='["t", "t"]')
        with launch_error(r"block = \['t', 't'\] evaluates to \(64, 64\) = 4096 "
                          r"threads; CUDA allows at most 1024 threads per block"):
            resolve(source, dims={"t": 64})

    def test_empty_grid(self):
        """rows = 0 gives an empty grid, which CUDA refuses."""
        with launch_error(r"grid\[0\] = 'rows' evaluates to 0; CUDA allows 1 "
                          r"to 2147483647 in grid x"):
            layernorm_plan(rows=0)

    def test_grid_y(self):
        source = one_kernel("int n", ["n"], grid='[1, "n"]')
        with launch_error(r"grid\[1\] = 'n' evaluates to 65536; CUDA allows 1 "
                          r"to 65535 in grid y"):
            resolve(source, dims={"n": 65536})

    def test_large_grid_x(self):
        plan = resolve(one_kernel("int n", ["n"], grid='["n"]'), dims={"n": 2**22})
        assert plan.launches[0].grid == (2**22, 1, 1)

    def test_grid_within_cuda_limits_but_over_the_thread_budget(self):
        """The largest grid CUDA allows would burn minutes of emulation per input: refused."""
        with launch_error(r"the launch has 2,147,483,647 threads \(grid \[2147483647\] x block \[1\]\); "
                          r"for buffers of this size at most 4,194,304 are run"):
            resolve(one_kernel("int n", ["n"], grid='["n"]'), dims={"n": 2**31 - 1})

    def test_shared_bytes(self):
        source = one_kernel("int n", ["n"], extra='shared_bytes = "n * 4"\n')
        with launch_error(rf"shared_bytes = 'n \* 4' evaluates to 49156; dynamic "
                          rf"shared memory must be 0 to "
                          rf"{MAX_DYNAMIC_SHARED_BYTES} bytes"):
            resolve(source, dims={"n": 12289})

    def test_missing_dim(self):
        source = one_kernel("int n", ["n"], grid='["ceil_div(nn, 256)"]')
        with launch_error(r"^line 4, launch 0 grid\[0\]: unknown name 'nn' in "
                          r"'ceil_div\(nn, 256\)' \(did you mean 'n'\?\); known "
                          r"names: 'n'$"):
            resolve(source, dims={"n": 1})

    def test_non_integral_scalar_in_an_expression(self):
        source = one_kernel("float eps", ["eps"], grid='["eps * 2"]')
        with launch_error(r"^line 4, launch 0 grid\[0\]: 'eps \* 2' uses scalar "
                          r"'eps' = 1e-05, which is not an integer$"):
            resolve(source, scalars={"eps": 1e-5})

    def test_division_by_zero_at_run_time(self):
        source = one_kernel("int n", ["n"], grid='["ceil_div(256, n)"]')
        with launch_error(r"division by zero in 'ceil_div\(256, n\)' with n=0"):
            resolve(source, dims={"n": 0})


class TestBuffers:
    def test_scratch_size_negative(self):
        extra = '[[scratch]]\nname = "tmp"\ndtype = "int32"\nsize = "n - 10"\n'
        with launch_error(r"^line 7, scratch 'tmp': size = 'n - 10' evaluates to "
                          r"-9 elements \(-36 bytes\); a scratch buffer holds 0 "
                          r"to 4294967296 bytes$"):
            resolve(one_kernel("int* tmp", ["tmp"], extra=extra), dims={"n": 1})

    def test_scratch_too_large(self):
        extra = '[[scratch]]\nname = "tmp"\ndtype = "float64"\nsize = "n * n"\n'
        with launch_error(r"evaluates to 10000000000 elements"):
            resolve(one_kernel("double* tmp", ["tmp"], extra=extra), dims={"n": 100000})

    def test_output_dtype(self):
        with launch_error(r"^output 'out': output 'out' has dtype 'complex64'; "
                          r"supported: float32, float64, float16, bfloat16"):
            resolve(one_kernel("float* out", ["out"]), outputs={"out": ((4,), "complex64")})

    @pytest.mark.parametrize("shape", [(-1,), (2.0,), 4, (True,)])
    def test_output_shape(self, shape):
        with launch_error(r"output 'out' has shape .*; expected non-negative "
                          r"integers"):
            resolve(one_kernel("float* out", ["out"]), outputs={"out": (shape, "float32")})

    def test_input_dtype(self):
        with launch_error(r"^input 'x': input 'x' has dtype complex64; "
                          r"supported: float64, float32"):
            resolve(one_kernel("float* x", ["x"]), {"x": np.zeros(2, np.complex64)})

    @pytest.mark.parametrize("value", [2.0, "4", True, None])
    def test_dim_must_be_an_integer(self, value):
        with launch_error(r"^dim 'n': dim 'n' must be an integer, got "):
            resolve(one_kernel("int n", ["n"]), dims={"n": value})

    @pytest.mark.parametrize("value", ["1e-5", True, None, 1j])
    def test_scalar_must_be_a_number(self, value):
        with launch_error(r"^scalar 'eps': scalar 'eps' must be a number, got "):
            resolve(one_kernel("float eps", ["eps"]), scalars={"eps": value})
