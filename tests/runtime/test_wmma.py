"""nvcuda::wmma on the CPU emulator (runtime/csrc/mg_wmma.h), through the real runner.

One warp multiplies half (or bfloat16) tiles, 16x16x16 and the 32x8x16 / 8x32x16 shapes; the
results are compared with numpy. The
element products are exact and the sum is float32 in k order, so the tolerance is float32's.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mutagym.runtime import compile
from mutagym.runtime.errors import CompileError
from mutagym.runtime.nvrtc import nvrtc_compile

LAUNCH = """/* mutagym
[[launch]]
kernel = "k"
grid = [1]
block = [{threads}]
args = ["a", "b", "c", "out"]
*/
#include <mma.h>
using namespace nvcuda;
"""


def source(body: str, *, la: str = "row_major", lb: str = "row_major", t: str = "half",
           threads: int = 32) -> str:
    return LAUNCH.format(threads=threads) + f"""
extern "C" __global__ void k(const {t}* a, const {t}* b, const float* c, float* out) {{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, {t}, wmma::{la}> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, {t}, wmma::{lb}> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
{body}
}}
"""


def kernel(body: str, **layout):
    return compile(source(body, **layout), backend="cpu")


def run(k, a, b, c=None, out_shape=(16, 16)):
    c = np.zeros(out_shape, np.float32) if c is None else c
    return k.run({"a": a, "b": b, "c": c}, {"out": (out_shape, "float32")}, {})


PLAIN = """
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(out, fc, 16, wmma::mem_row_major);
"""


def tiles(seed: int, dtype=np.float16, shape=(16, 16)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("la,lb", [("row_major", "row_major"), ("col_major", "col_major"),
                                   ("row_major", "col_major")])
def test_product_in_each_layout(la, lb):
    a, b = tiles(1)
    r = run(kernel(PLAIN, la=la, lb=lb), a, b)
    assert r.outcome == "ok", r.message
    A = a.astype(np.float64) if la == "row_major" else a.astype(np.float64).T
    B = b.astype(np.float64) if lb == "row_major" else b.astype(np.float64).T
    np.testing.assert_allclose(r.outputs["out"], A @ B, rtol=1e-5, atol=1e-5)


def test_wrong_layout_gives_a_wrong_product():
    a, b = tiles(2)
    r = run(kernel(PLAIN, la="col_major"), a, b)
    assert r.outcome == "ok", r.message
    assert np.abs(r.outputs["out"] - a.astype(np.float64) @ b.astype(np.float64)).max() > 1.0


def test_sum_is_float32_in_k_order_exact_products():
    """Products of halves are exact in float; the sum runs k = 0..15 in float32, then adds c."""
    a, b = tiles(3)
    c = np.random.default_rng(4).standard_normal((16, 16)).astype(np.float32)
    body = PLAIN.replace("wmma::fill_fragment(fc, 0.0f);",
                         "wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);")
    r = run(kernel(body), a, b, c)
    assert r.outcome == "ok", r.message
    want = np.zeros((16, 16), np.float32)
    for k in range(16):
        want += a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)
    np.testing.assert_array_equal(r.outputs["out"], want + c)


def test_ldm_past_16_and_column_major_accumulator():
    """Tiles inside wider matrices (ldm 24 and 40); c loaded and the result stored column-major."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 24)).astype(np.float16)
    b = rng.standard_normal((16, 40)).astype(np.float16)
    c = rng.standard_normal((16, 32)).astype(np.float32)
    body = """
    wmma::load_matrix_sync(fc, c, 32, wmma::mem_col_major);
    wmma::load_matrix_sync(fa, a + 8, 24);
    wmma::load_matrix_sync(fb, b + 4, 40);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(out, fc, 24, wmma::mem_col_major);
"""
    r = run(kernel(body), a, b, c, out_shape=(16, 24))
    assert r.outcome == "ok", r.message
    C = np.array([[c.reshape(-1)[j * 32 + i] for j in range(16)] for i in range(16)], np.float64)
    want = a[:, 8:24].astype(np.float64) @ b[:, 4:20].astype(np.float64) + C
    got = np.array([[r.outputs["out"].reshape(-1)[j * 24 + i] for j in range(16)] for i in range(16)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_bfloat16_operands():
    a, b = tiles(6, ml_dtypes.bfloat16)
    r = run(kernel(PLAIN, t="__nv_bfloat16"), a, b)
    assert r.outcome == "ok", r.message
    np.testing.assert_allclose(r.outputs["out"], a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-5, atol=1e-4)


def test_fragment_elements_scaled_in_place():
    a, b = tiles(7)
    body = PLAIN.replace("wmma::store_matrix_sync",
                         "for (int i = 0; i < fc.num_elements; i++) fc.x[i] *= 2.0f;\n"
                         "    wmma::store_matrix_sync")
    r = run(kernel(body), a, b)
    assert r.outcome == "ok", r.message
    np.testing.assert_allclose(r.outputs["out"], 2 * (a.astype(np.float64) @ b.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads,guard", [(16, ""), (32, "if (threadIdx.x < 16) ")])
def test_partial_warp_is_a_sync_error(threads, guard):
    """A warp of 16 threads, or half a warp at the load, is refused (all 32 lanes must take part)."""
    a, b = tiles(8)
    body = PLAIN.replace("wmma::load_matrix_sync(fa", guard + "wmma::load_matrix_sync(fa")
    r = run(kernel(body, threads=threads), a, b)
    assert r.outcome == "sync_error", (r.outcome, r.message)
    if not guard:
        assert "all 32 lanes" in r.stdout


def test_nvrtc_compiles_the_same_kernels():
    """The real mma.h (crt/mma.h from nvidia-cuda-crt) accepts what the emulator runs."""
    for t in ("half", "__nv_bfloat16"):
        assert "wmma" in nvrtc_compile(source(PLAIN, la="col_major", t=t)).ptx


@pytest.mark.parametrize("sync,outcome", [("__syncwarp();", "ok"), ("", "data_race")])
def test_load_of_a_tile_other_lanes_wrote_needs_a_sync(sync, outcome):
    """The loads are the lanes' own reads: a shared tile written by other lanes without a
    __syncwarp in between is a data race, as on a GPU. A float tile: the race detector misses the
    same pattern on a `__half` tile today (benchmarks/README.md, "Tensor-core substrate and rules")."""
    a, b = tiles(9)
    c = np.random.default_rng(10).standard_normal((16, 16)).astype(np.float32)
    body = f"""
    __shared__ __align__(32) float s[256];
    for (int e = threadIdx.x; e < 256; e += 32) s[e] = c[e];
    {sync}
    wmma::load_matrix_sync(fc, s, 16, wmma::mem_row_major);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(out, fc, 16, wmma::mem_row_major);
"""
    r = run(kernel(body), a, b, c)
    assert r.outcome == outcome, (r.outcome, r.message)


def test_half_accumulator_rounds_the_float_sum_once():
    a, b = tiles(11)
    text = LAUNCH.format(threads=32).replace('args = ["a", "b", "c", "out"]', 'args = ["a", "b", "out"]') + """
extern "C" __global__ void k(const half* a, const half* b, half* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> fc;
    wmma::fill_fragment(fc, __float2half(0.0f));
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(out, fc, 16, wmma::mem_row_major);
}
"""
    r = compile(text, backend="cpu").run({"a": a, "b": b}, {"out": ((16, 16), "float16")}, {})
    assert r.outcome == "ok", r.message
    want = np.zeros((16, 16), np.float32)
    for k in range(16):
        want += a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)
    np.testing.assert_array_equal(r.outputs["out"], want.astype(np.float16))
    assert "wmma" in nvrtc_compile(text).ptx


@pytest.mark.parametrize("m,n", [(32, 8), (8, 32)])
@pytest.mark.parametrize("lb", ["row_major", "col_major"])
def test_other_shapes(m, n, lb):
    """32x8x16 and 8x32x16: a (m, 16) row-major, b (16, n) in either layout, out (m, n)."""
    rng = np.random.default_rng(12)
    a = rng.standard_normal((m, 16)).astype(np.float16)
    b = rng.standard_normal((16, n) if lb == "row_major" else (n, 16)).astype(np.float16)
    text = LAUNCH.format(threads=32).replace('args = ["a", "b", "c", "out"]', 'args = ["a", "b", "out"]') + f"""
extern "C" __global__ void k(const half* a, const half* b, float* out) {{
    wmma::fragment<wmma::matrix_a, {m}, {n}, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, {m}, {n}, 16, half, wmma::{lb}> fb;
    wmma::fragment<wmma::accumulator, {m}, {n}, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, {n if lb == "row_major" else 16});
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(out, fc, {n}, wmma::mem_row_major);
}}
"""
    r = compile(text, backend="cpu").run({"a": a, "b": b}, {"out": ((m, n), "float32")}, {})
    assert r.outcome == "ok", r.message
    B = b.astype(np.float64) if lb == "row_major" else b.astype(np.float64).T
    np.testing.assert_allclose(r.outputs["out"], a.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    assert "wmma" in nvrtc_compile(text).ptx


def test_unsupported_fragment_is_refused_with_the_reason():
    text = LAUNCH.format(threads=32) + """
extern "C" __global__ void k(const half* a, const half* b, const float* c, float* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, half, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a, 16);
}
"""
    with pytest.raises(CompileError, match="16x16x16, 32x8x16 and 8x32x16 only"):
        compile(text, backend="cpu")
