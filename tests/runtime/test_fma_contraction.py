"""FMA contraction on the CPU emulator, like nvcc's default (-fmad=true), with real runs.

Kernels are built contracted unless `MUTAGYM_FMA=0` (`toolchain.fma_contraction`): in float (and
double) code `a*b+c` is one fused multiply-add wherever a product feeds an add, across statements
(as NVVM contracts); the intrinsics CUDA never contracts (__fmul_rn, __fadd_rn, atomicAdd's add)
stay two roundings; the __half / __half2 operators fuse to HFMA (mg_half.h's model), bf16's never.
Each check compares the emulator's bits with an exact model: the fused one (a single rounding of
the exact a*b+c) and the unfused one (numpy's float32 / float16 arithmetic, one rounding per
operation). Inputs are chosen so the two models differ (c = -fl(a*b) makes the fused result the
product's rounding error and the unfused one zero), and each test asserts that they do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings

import ml_dtypes
import numpy as np
import pytest

from mutagym.runtime import InfrastructureError, compile, toolchain
from mutagym.runtime.submission import parse_submission
from mutagym.runtime.translate import translation_unit
from submission_text import launch, submission

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
needs_fma = pytest.mark.skipif(toolchain._cpu_fma_flags() is None, reason="this CPU has no FMA instructions")

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16
N = 256


# ============================================================================ exact models

def fused(a, b, c, dtype):
    """round(a*b + c) once, to *dtype* (float32 or float16 inputs): the product is exact in double,
    the sum's error is recovered (TwoSum) and folded into the last bit (round to odd), so the one
    conversion to *dtype* (53 >= 2*24+2 bits) is the correctly rounded fused result."""
    a, b, c = (np.asarray(v).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    bits = s.view(np.int64).copy()
    fix = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    bits[fix] += np.where((err[fix] > 0) == (s[fix] > 0), 1, -1)
    return bits.view(np.float64).astype(dtype)


def unfused(a, b, c):
    """a*b rounded, then + c rounded: numpy's arithmetic in the inputs' own type."""
    return a * b + c


def dot_fused(x, y, dtype):
    """acc_i = sum_j x[j] * y[(i + j) % n] from 0, each step one fused rounding."""
    n = len(x)
    acc = np.zeros(n, dtype)
    for j in range(n):
        acc = fused(np.full(n, x[j]), y[(np.arange(n) + j) % n], acc, dtype)
    return acc


def dot_unfused(x, y, dtype):
    n = len(x)
    acc = np.zeros(n, dtype)
    for j in range(n):
        acc = (np.full(n, x[j], dtype) * y[(np.arange(n) + j) % n]).astype(dtype) + acc
    return acc


def same_bits(got, want) -> np.ndarray:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    u = f"u{got.dtype.itemsize}"
    return got.view(u) == want.view(u)


def assert_bits(got, want, what):
    ok = same_bits(got, want)
    assert ok.all(), (f"{what}: {int((~ok).sum())} of {ok.size} differ, e.g. got {got[~ok][:3]} "
                      f"want {want[~ok][:3]}")


@contextlib.contextmanager
def fma_env(value: str | None):
    old = os.environ.get(toolchain.FMA_ENV)
    if value is None:
        os.environ.pop(toolchain.FMA_ENV, None)
    else:
        os.environ[toolchain.FMA_ENV] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(toolchain.FMA_ENV, None)
        else:
            os.environ[toolchain.FMA_ENV] = old


_BUILT: dict = {}


def built(source: str, mode: str | None):
    """The kernel compiled with MUTAGYM_FMA=*mode* (None: unset, the default), once per session."""
    if (source, mode) not in _BUILT:
        with fma_env(mode):
            _BUILT[source, mode] = compile(source, backend="cpu")
    return _BUILT[source, mode]


# ============================================================================ float32

FLOAT_COLUMNS = ("a*b+c", "c+a*b", "a*b-c", "c-a*b", "p=a*b; p+c", "fmaf", "__fmaf_rn",
                 "__fmul_rn(a,b)+c", "__fadd_rn(a*b,c)", "__fsub_rn(a*b,c)",
                 "__fadd_rn(__fmul_rn(a,b),c)", "atomicAdd(c, a*b)", "dot", "a*b+c*d")
# Each form reads its own copy of the inputs (column k at a[k * n + i]), so g++ cannot share one
# product between forms: it contracts a product only when every use of it is an add or a subtract
# in the same block (NVVM fuses each add whatever else uses the product).
FLOAT = submission("""
    extern "C" __global__ void fl(const float* a, const float* b, const float* c, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        #define X(k) a[(k) * n + i]
        #define Y(k) b[(k) * n + i]
        #define Z(k) c[(k) * n + i]
        float* o = out + 14 * i;
        o[0] = X(0) * Y(0) + Z(0);
        o[1] = Z(1) + X(1) * Y(1);
        o[2] = X(2) * Y(2) - Z(2);
        o[3] = Z(3) - X(3) * Y(3);
        float p = X(4) * Y(4);
        o[4] = p + Z(4);
        o[5] = fmaf(X(5), Y(5), Z(5));
        o[6] = __fmaf_rn(X(6), Y(6), Z(6));
        o[7] = __fmul_rn(X(7), Y(7)) + Z(7);
        o[8] = __fadd_rn(X(8) * Y(8), Z(8));
        o[9] = __fsub_rn(X(9) * Y(9), Z(9));
        o[10] = __fadd_rn(__fmul_rn(X(10), Y(10)), Z(10));
        o[11] = Z(11);
        atomicAdd(&o[11], X(11) * Y(11));
        float acc = 0.0f;
        for (int j = 0; j < n; ++j) acc += a[12 * n + j] * b[12 * n + (i + j) % n];
        o[12] = acc;
        o[13] = X(13) * Y(13) + Z(13) * b[13 * n + (i + 1) % n];
    }
""", launch("fl", ["ceil_div(n, 64)"], [64], ["a", "b", "c", "out", "n"]))


@pytest.fixture(scope="module")
def float_inputs():
    rng = np.random.default_rng(15)
    a = rng.uniform(-2, 2, N).astype(F32)
    b = rng.uniform(-2, 2, N).astype(F32)
    c = -(a * b)                # a*b+c fused: the product's rounding error; unfused: 0
    c[1::2] = a[1::2] * b[1::2]  # the same for a*b-c and c-a*b
    c[::8] = rng.uniform(-2, 2, N // 8).astype(F32)
    return a, b, c


def run_float(mode, inputs):
    a, b, c = inputs
    a, b, c = (np.tile(v, 14) for v in (a, b, c))
    r = built(FLOAT, mode).run({"a": a, "b": b, "c": c}, {"out": ((14 * N,), "float32")}, {"n": N})
    assert r.outcome == "ok", r
    out = r.outputs["out"].reshape(N, 14)
    return {name: out[:, k] for k, name in enumerate(FLOAT_COLUMNS)}


def float_models(a, b, c):
    w = b[(np.arange(N) + 1) % N]
    plain = unfused(a, b, c)
    return {
        "fused": fused(a, b, c, F32), "plain": plain,
        "sub_fused": fused(a, b, -c, F32), "sub_plain": a * b - c,
        "rsub_fused": fused(-a, b, c, F32), "rsub_plain": c - a * b,
        "dot_fused": dot_fused(a, b, F32), "dot_plain": dot_unfused(a, b, F32),
        "two_fused": fused(a, b, c * w, F32), "two_plain": a * b + c * w,
    }


def test_models_differ_on_these_inputs(float_inputs):
    m = float_models(*float_inputs)
    for fused_name, plain_name in (("fused", "plain"), ("sub_fused", "sub_plain"),
                                   ("rsub_fused", "rsub_plain"), ("dot_fused", "dot_plain")):
        differ = ~same_bits(m[fused_name], m[plain_name])
        assert differ.mean() > 0.3, (fused_name, differ.mean())


@needs_fma
@pytest.mark.parametrize("mode", [None, "1"], ids=["default", "MUTAGYM_FMA=1"])
def test_float_products_are_fused_by_default(mode, float_inputs):
    got, m = run_float(mode, float_inputs), float_models(*float_inputs)
    for col in ("a*b+c", "c+a*b", "p=a*b; p+c", "fmaf", "__fmaf_rn"):
        assert_bits(got[col], m["fused"], col)
    assert_bits(got["a*b-c"], m["sub_fused"], "a*b-c")
    assert_bits(got["c-a*b"], m["rsub_fused"], "c-a*b")
    assert_bits(got["dot"], m["dot_fused"], "dot product: one fused rounding per step")
    assert_bits(got["a*b+c*d"], m["two_fused"], "a*b+c*d: the left product fused")


@needs_fma
@pytest.mark.parametrize("mode", [None, "0"], ids=["default", "MUTAGYM_FMA=0"])
def test_never_contracted_intrinsics_stay_unfused(mode, float_inputs):
    got, m = run_float(mode, float_inputs), float_models(*float_inputs)
    for col in ("__fmul_rn(a,b)+c", "__fadd_rn(a*b,c)", "__fadd_rn(__fmul_rn(a,b),c)",
                "atomicAdd(c, a*b)"):
        assert_bits(got[col], m["plain"], col)
    assert_bits(got["__fsub_rn(a*b,c)"], m["sub_plain"], "__fsub_rn(a*b,c)")


@pytest.mark.parametrize("mode", ["0", "off"])
def test_switch_off_gives_unfused_results(mode, float_inputs):
    got, m = run_float(mode, float_inputs), float_models(*float_inputs)
    for col in ("a*b+c", "c+a*b", "p=a*b; p+c"):
        assert_bits(got[col], m["plain"], col)
    assert_bits(got["a*b-c"], m["sub_plain"], "a*b-c")
    assert_bits(got["c-a*b"], m["rsub_plain"], "c-a*b")
    assert_bits(got["dot"], m["dot_plain"], "dot product")
    assert_bits(got["a*b+c*d"], m["two_plain"], "a*b+c*d")
    for col in ("fmaf", "__fmaf_rn"):                        # explicit FMA is always fused
        assert_bits(got[col], m["fused"], col)


# ============================================================================ __half2 / __half / bf16

HALF_COLUMNS = ("a*b+c", "c+a*b", "a*b-c", "c-a*b", "__hfma2", "p=a*b; p+c", "__hadd2(__hmul2)",
                "__hadd2_rn(__hmul2_rn)", "dot", "scalar", "-(a*b)+c", "acc-=a*b")
HALF = submission("""
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    extern "C" __global__ void hf(const __half2* a, const __half2* b, const __half2* c,
                                  __half2* out, float* bf, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        __half2 x = a[i], y = b[i], z = c[i];
        __half2* o = out + 12 * i;
        o[0] = x * y + z;
        o[1] = z + x * y;
        o[2] = x * y - z;
        o[3] = z - x * y;
        o[4] = __hfma2(x, y, z);
        __half2 p = x * y;
        o[5] = p + z;
        o[6] = __hadd2(__hmul2(x, y), z);
        o[7] = __hadd2_rn(__hmul2_rn(x, y), z);
        __half2 acc = __float2half2_rn(0.0f);
        for (int j = 0; j < n; ++j) acc += a[j] * b[(i + j) % n];
        o[8] = acc;
        __half xl = __low2half(x), yl = __low2half(y), zl = __low2half(z);
        __half xh = __high2half(x), yh = __high2half(y), zh = __high2half(z);
        o[9] = __halves2half2(xl * yl + zl, zh - xh * yh);
        o[10] = -(x * y) + z;
        __half2 back = z;
        back -= x * y;
        o[11] = back;
        __nv_bfloat16 bx = __float2bfloat16(__low2float(x)), by = __float2bfloat16(__low2float(y));
        __nv_bfloat16 bz = __float2bfloat16(-__bfloat162float(bx) * __bfloat162float(by));
        bf[i] = __bfloat162float(bx * by + bz);
    }
""", launch("hf", ["ceil_div(n, 64)"], [64], ["a", "b", "c", "out", "bf", "n"]))
HN = 64   # pairs; the dot product of 64 terms in [-1, 1] stays far from half's range


@pytest.fixture(scope="module")
def half_inputs():
    rng = np.random.default_rng(16)
    a = rng.uniform(-1, 1, 2 * HN).astype(F16)
    b = rng.uniform(-1, 1, 2 * HN).astype(F16)
    c = -(a * b)
    c[2::4] = a[2::4] * b[2::4]   # lane .x of every other pair: for a*b-c and c-a*b
    c[3::4] = a[3::4] * b[3::4]   # and lane .y (the scalar check's zh - xh*yh)
    c[::16] = rng.uniform(-1, 1, len(c[::16])).astype(F16)
    return a, b, c


def run_half(mode, inputs):
    a, b, c = inputs
    r = built(HALF, mode).run({"a": a, "b": b, "c": c},
                              {"out": ((24 * HN,), "float16"), "bf": ((HN,), "float32")}, {"n": HN})
    assert r.outcome == "ok", r
    out = r.outputs["out"].reshape(HN, 12, 2)
    got = {name: out[:, k, :].reshape(-1) for k, name in enumerate(HALF_COLUMNS)}
    return got, r.outputs["bf"]


def half_models(a, b, c):
    pa, pb, pc = (v.reshape(HN, 2) for v in (a, b, c))   # lanes .x, .y of each __half2
    dot = np.stack([dot_fused(pa[:, lane], pb[:, lane], F16) for lane in (0, 1)], axis=1)
    dot_plain = np.stack([dot_unfused(pa[:, lane], pb[:, lane], F16) for lane in (0, 1)], axis=1)
    scalar = np.stack([fused(pa[:, 0], pb[:, 0], pc[:, 0], F16),
                       fused(-pa[:, 1], pb[:, 1], pc[:, 1], F16)], axis=1)
    scalar_plain = np.stack([pa[:, 0] * pb[:, 0] + pc[:, 0], pc[:, 1] - pa[:, 1] * pb[:, 1]], axis=1)
    return {"fused": fused(a, b, c, F16), "plain": unfused(a, b, c),
            "sub_fused": fused(a, b, -c, F16), "sub_plain": a * b - c,
            "rsub_fused": fused(-a, b, c, F16), "rsub_plain": c - a * b,
            "dot_fused": dot.reshape(-1), "dot_plain": dot_plain.reshape(-1),
            "scalar_fused": scalar.reshape(-1), "scalar_plain": scalar_plain.reshape(-1)}


def test_half_models_differ_on_these_inputs(half_inputs):
    m = half_models(*half_inputs)
    for name in ("", "sub_", "rsub_", "dot_", "scalar_"):
        differ = ~same_bits(m[f"{name}fused"], m[f"{name}plain"])
        assert differ.mean() > 0.3, (name, differ.mean())


def _bf16_reference(a, b):
    x = a.reshape(HN, 2)[:, 0].astype(np.float32).astype(BF16)
    y = b.reshape(HN, 2)[:, 0].astype(np.float32).astype(BF16)
    z = (-(x.astype(np.float32) * y.astype(np.float32))).astype(BF16)
    return ((x * y) + z).astype(np.float32)                 # ml_dtypes: one rounding per operation


@needs_fma
def test_half2_operators_fuse_to_hfma(half_inputs):
    a, b, c = half_inputs
    got, bf = run_half(None, half_inputs)
    m = half_models(a, b, c)
    for col in ("a*b+c", "c+a*b", "__hfma2"):
        assert_bits(got[col], m["fused"], col)
    assert_bits(got["a*b-c"], m["sub_fused"], "a*b-c")
    for col in ("c-a*b", "-(a*b)+c", "acc-=a*b"):
        assert_bits(got[col], m["rsub_fused"], col)
    assert_bits(got["dot"], m["dot_fused"], "acc += a*b on __half2: one HFMA per step")
    assert_bits(got["scalar"], m["scalar_fused"], "__half operators")
    # documented as not modelled (a product stored in a declared __half2, intrinsics by name) or
    # never contracted (_rn): two roundings
    for col in ("p=a*b; p+c", "__hadd2(__hmul2)", "__hadd2_rn(__hmul2_rn)"):
        assert_bits(got[col], m["plain"], col)
    assert_bits(bf, _bf16_reference(a, b), "bf16 operators are never contracted (sm_80: fma.rn.bf16)")
    assert (bf == 0).mean() > 0.5  # fused, most of these would be the product's rounding error


def test_half2_operators_unfused_with_the_switch_off(half_inputs):
    a, b, c = half_inputs
    got, bf = run_half("0", half_inputs)
    m = half_models(a, b, c)
    for col in ("a*b+c", "c+a*b", "p=a*b; p+c", "__hadd2(__hmul2)", "__hadd2_rn(__hmul2_rn)"):
        assert_bits(got[col], m["plain"], col)
    assert_bits(got["a*b-c"], m["sub_plain"], "a*b-c")
    for col in ("c-a*b", "-(a*b)+c", "acc-=a*b"):
        assert_bits(got[col], m["rsub_plain"], col)
    assert_bits(got["dot"], m["dot_plain"], "dot product")
    assert_bits(got["scalar"], m["scalar_plain"], "__half operators")
    assert_bits(got["__hfma2"], m["fused"], "__hfma2 is always fused")
    assert_bits(bf, _bf16_reference(a, b), "bf16")


def test_a_changed_product_is_added_as_it_is():
    """`auto p = a * b; p += c;` changes the product through a __half&: a later `p + d` must add
    that value (not re-fuse the stale operands)."""
    src = submission("""
        #include <cuda_fp16.h>
        extern "C" __global__ void k(const __half* a, __half* out, int n) {
            int i = threadIdx.x;
            if (i >= n) return;
            auto p = a[0] * a[1];
            p += a[2];
            out[i] = p + a[3];
        }
    """, launch("k", [1], [1], ["a", "out", "n"]))
    a = np.array([1.5, 3.0, 100.0, -104.5], dtype=F16)
    want = (a[0] * a[1] + a[2]) + a[3]
    for mode in (None, "0"):
        r = built(src, mode).run({"a": a}, {"out": ((1,), "float16")}, {"n": 1})
        assert r.outcome == "ok" and r.outputs["out"][0] == want, (mode, r.outputs["out"])


# ============================================================================ the switch itself

TU = translation_unit(parse_submission(FLOAT))


def test_modes_never_share_an_object_or_a_header():
    off = toolchain.kernel_flags(False)
    assert "-ffp-contract=off" in off and not any(f.startswith("-D__MG_FP_CONTRACT") for f in off)
    if toolchain._cpu_fma_flags() is not None:
        on = toolchain.kernel_flags(True)
        assert "-ffp-contract=fast" in on and "-D__MG_FP_CONTRACT=1" in on
        assert toolchain.build_kernel(TU, fma=True) != toolchain.build_kernel(TU, fma=False)
        assert toolchain.header_path(on) != toolchain.header_path(off)
    with fma_env("0"):
        assert toolchain.build_kernel(TU) == toolchain.build_kernel(TU, fma=False)
        assert toolchain.kernel_flags() == off


def test_switch_values():
    with fma_env("0"):
        assert toolchain.fma_contraction() is False
        assert toolchain.fma_contraction(True) is (toolchain._cpu_fma_flags() is not None)
    with fma_env("maybe"), pytest.raises(InfrastructureError, match="MUTAGYM_FMA"):
        toolchain.fma_contraction()


def test_a_cpu_without_fma(monkeypatch):
    monkeypatch.setattr(toolchain, "_cpu_fma_flags", lambda: None)
    toolchain._warn_no_fma.cache_clear()
    with fma_env(None), pytest.warns(RuntimeWarning, match="no FMA instructions"):
        assert toolchain.fma_contraction() is False
    with fma_env("1"), pytest.raises(InfrastructureError, match="no FMA"):
        toolchain.kernel_flags()
    with pytest.raises(InfrastructureError, match="no FMA"):
        toolchain.fma_contraction(True)
    with fma_env("0"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert toolchain.kernel_flags() == toolchain.kernel_flags(False)
    toolchain._warn_no_fma.cache_clear()


# ============================================================================ a product shuffled

SHUFFLE = submission("""
    #include <cuda_fp16.h>
    extern "C" __global__ void sh(const __half2* a, const __half2* b, const __half2* c,
                                  __half2* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        __half2 x = a[i], y = b[i], z = c[i];
        out[2 * i] = __shfl_xor_sync(0xffffffffu, x * y, 1);
        out[2 * i + 1] = __shfl_xor_sync(0xffffffffu, x * y, 1) + z;
    }
""", launch("sh", ["ceil_div(n, 64)"], [64], ["a", "b", "c", "out", "n"]))


@pytest.mark.parametrize("mode", [None, "0"], ids=["default", "MUTAGYM_FMA=0"])
def test_a_shuffled_half2_product_is_the_rounded_product(mode, half_inputs):
    """`__shfl_xor_sync(m, a * b, 1)` on __half2 (valid CUDA: the product is a __half2) compiles
    although the contracted product is a __mg_hprod2, and moves the rounded product; an add after
    the shuffle is not fused with the neighbour's operands (one rounding each, as on a GPU)."""
    a, b, c = half_inputs
    swap = lambda v: v.reshape(HN, 2)[np.arange(HN) ^ 1].reshape(-1)   # the xor-1 lane's pair
    pa, pb = swap(a), swap(b)
    z = -(pa * pb)                          # fused with pa, pb: the product's rounding error
    z[::16] = c[::16]
    assert (~same_bits(fused(pa, pb, z, F16), unfused(pa, pb, z))).mean() > 0.3
    r = built(SHUFFLE, mode).run({"a": a, "b": b, "c": z}, {"out": ((4 * HN,), "float16")}, {"n": HN})
    assert r.outcome == "ok", r
    out = r.outputs["out"].reshape(HN, 2, 2)
    assert_bits(out[:, 0, :].reshape(-1), pa * pb, "__shfl_xor_sync(m, a * b, 1)")
    assert_bits(out[:, 1, :].reshape(-1), unfused(pa, pb, z), "__shfl_xor_sync(m, a * b, 1) + c")
