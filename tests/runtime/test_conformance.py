"""CPU emulator conformance: small CUDA kernels covering every device feature, checked against numpy.

Each entry of `CONFORMANCE` is one submission (launch block + CUDA C) and the cases it runs on.
`test_kernel_matches_numpy` compiles it once, runs every case in one batch under three thread
schedules (a correct kernel must be right under all of them) and compares each output with a
numpy reference: bit for bit where CUDA's semantics fix the result (integers, conversions,
correctly rounded operations), within a stated number of ulps where the CUDA math library allows
an error. `test_nvrtc_accepts` checks that the same text compiles with NVRTC, so the suite is
valid CUDA and not just something the emulator happens to accept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from mutagym.runtime import CompileError, RunCase, RunResult, compile, toolchain
from mutagym.runtime.buffers import Poison, initial_output, run_case_digest
from mutagym.runtime.nvrtc import nvrtc_compile
from submission_text import compiled, launch, scratch, submission

BF16 = ml_dtypes.bfloat16
#: Every correct kernel must give the same (or, for order-dependent float sums, an equally
#: accurate) result under each of these thread orders.
SCHEDULES = ("ascending", "descending", "shuffled:7")
SIZES = (1, 3, 1000, 4099)


# ============================================================================ building submissions

# ============================================================================ comparing outputs

def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Ulps between two float arrays of one dtype (both finite or both the same infinity)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    wide = np.int64

    def ordered(a):
        i = a.view(bits).astype(wide)
        return np.where(i < 0, np.iinfo(bits).min - i, i)

    return np.abs(ordered(got) - ordered(want))


def assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Bitwise equality, except that any NaN matches any NaN (payloads differ between libraries)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    if got.dtype.kind == "f" or got.dtype == BF16:
        with np.errstate(invalid="ignore"):
            nan_got, nan_want = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
        bad = (nan_got != nan_want) | (~nan_got & (got.view(f"u{got.itemsize}")
                                                   != want.view(f"u{want.itemsize}")))
    else:
        bad = got != want
    if bad.any():
        idx = np.argwhere(bad)[:5]
        pairs = [(tuple(int(i) for i in k), got[tuple(k)], want[tuple(k)]) for k in idx]
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ; "
                             f"first (index, got, want): {pairs}")


def assert_close(got: np.ndarray, want: np.ndarray, what: str, *, rtol: float = 0.0,
                 atol: float = 0.0, ulps: int | None = None) -> None:
    """|got - want| <= atol + rtol |want| (or within *ulps* of the float32/float64 value)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if ulps is not None:
        want_t = want.astype(got.dtype)
        finite = np.isfinite(want_t)
        assert_same(got[~finite], want_t[~finite], f"{what} (non-finite)")
        dist = ulp_distance(got[finite], want_t[finite])
        assert dist.size == 0 or dist.max() <= ulps, (
            f"{what}: {int((dist > ulps).sum())} elements beyond {ulps} ulps (max {dist.max()}); "
            f"first at {int(np.argmax(dist > ulps))}")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    ok = np.abs(g - w) <= atol + rtol * np.abs(w)
    if not ok.all():
        k = int(np.argmax(~ok.reshape(-1)))
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} elements out of tolerance; "
                             f"first at flat index {k}: got {g.reshape(-1)[k]!r}, want {w.reshape(-1)[k]!r}")


# ============================================================================ the registry

Check = Callable[[RunResult, str], None]


@dataclass(frozen=True)
class Case:
    """One input set and what its outputs must be."""

    label: str
    run: RunCase
    check: Check


def exact(**want: np.ndarray) -> Check:
    """Every named output equals its reference bit for bit."""
    def check(result: RunResult, where: str) -> None:
        for name, array in want.items():
            assert_same(result.outputs[name], np.asarray(array), f"{where}: {name}")
    return check


def close(rtol: float = 0.0, atol: float = 0.0, ulps: int | None = None, **want: np.ndarray) -> Check:
    """Every named output is within tolerance of its (float64) reference."""
    def check(result: RunResult, where: str) -> None:
        for name, array in want.items():
            assert_close(result.outputs[name], np.asarray(array), f"{where}: {name}", rtol=rtol,
                         atol=atol, ulps=ulps)
    return check


def both(*checks: Check) -> Check:
    def check(result: RunResult, where: str) -> None:
        for c in checks:
            c(result, where)
    return check


@dataclass(frozen=True)
class Conformance:
    id: str
    source: str
    cases: Callable[[], list[Case]]
    schedules: tuple[str, ...] = SCHEDULES


CONFORMANCE: list[Conformance] = []


def conformance(id: str, source: str, schedules: tuple[str, ...] = SCHEDULES):  # noqa: A002
    """Register the decorated case builder as the conformance entry *id* for *source*."""
    def register(cases: Callable[[], list[Case]]):
        CONFORMANCE.append(Conformance(id, source, cases, schedules))
        return cases
    return register


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


#: Kernels are built with FMA contraction (nvcc's default) unless MUTAGYM_FMA=0.
CONTRACTED = toolchain.fma_contraction()


def fma32(a, b, c) -> np.ndarray:
    """float32 a*b+c rounded once (exact product in double, the sum's error folded in by round to
    odd, then one rounding to float32)."""
    a, b, c = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(a, b, c))
    p = a * b
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)
    bits = s.view(np.int64).copy()
    fix = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
    bits[fix] += np.where((err[fix] > 0) == (s[fix] > 0), 1, -1)
    return bits.view(np.float64).astype(np.float32)


def uniform(n: int, seed: int, low: float = -1.0, high: float = 1.0, dtype=np.float32) -> np.ndarray:
    return rng(seed).uniform(low, high, n).astype(dtype)


# ============================================================================ indexing and grids

INDEX_3D = submission("""
    extern "C" __global__ void index3d(int* out, int* meta) {
        int X = gridDim.x * blockDim.x, Y = gridDim.y * blockDim.y;
        int gx = blockIdx.x * blockDim.x + threadIdx.x;
        int gy = blockIdx.y * blockDim.y + threadIdx.y;
        int gz = blockIdx.z * blockDim.z + threadIdx.z;
        out[(gz * Y + gy) * X + gx] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z
            + 1000 * blockIdx.x + 10000 * blockIdx.y + 100000 * blockIdx.z;
        if (gx == 0 && gy == 0 && gz == 0) {
            meta[0] = gridDim.x; meta[1] = gridDim.y; meta[2] = gridDim.z;
            meta[3] = blockDim.x; meta[4] = blockDim.y; meta[5] = blockDim.z;
            meta[6] = warpSize;
        }
    }
""", launch("index3d", ["gx", "gy", 2], [4, "by", 2], ["out", "meta"]))


@conformance("grid3d-block3d-indices", INDEX_3D)
def _():
    cases = []
    for gx, gy, by in ((3, 2, 3), (1, 1, 1), (2, 5, 4)):
        grid, block = (gx, gy, 2), (4, by, 2)
        z, y, x = np.meshgrid(np.arange(grid[2] * block[2]), np.arange(grid[1] * block[1]),
                              np.arange(grid[0] * block[0]), indexing="ij")
        want = ((x % block[0]) + 10 * (y % block[1]) + 100 * (z % block[2]) + 1000 * (x // block[0])
                + 10000 * (y // block[1]) + 100000 * (z // block[2])).astype(np.int32)
        meta = np.array([*grid, *block, 32], np.int32)
        cases.append(Case(f"grid{grid}-block{block}", RunCase(
            {}, {"out": (want.shape, "int32"), "meta": ((7,), "int32")}, {"gx": gx, "gy": gy, "by": by}),
            exact(out=want, meta=meta)))
    return cases


TRANSPOSE_2D = submission("""
    extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ out,
                                         int rows, int cols) {
        int c = blockIdx.x * blockDim.x + threadIdx.x;
        int r = blockIdx.y * blockDim.y + threadIdx.y;
        if (r < rows && c < cols) out[c * rows + r] = x[r * cols + c];
    }
""", launch("transpose", ["ceil_div(cols, 16)", "ceil_div(rows, 8)"], [16, 8],
            ["x", "out", "rows", "cols"]))


@conformance("grid2d-block2d-transpose", TRANSPOSE_2D)
def _():
    cases = []
    for rows, cols in ((1, 1), (3, 5), (37, 50), (64, 129)):
        x = uniform(rows * cols, rows).reshape(rows, cols)
        cases.append(Case(f"{rows}x{cols}", RunCase({"x": x}, {"out": ((cols, rows), "float32")},
                                                    {"rows": rows, "cols": cols}),
                          exact(out=np.ascontiguousarray(x.T))))
    return cases


GRID_STRIDE_RELU = submission("""
    extern "C" __global__ void relu(const float* x, float* out, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
            out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    }
""", launch("relu", [4], [128], ["x", "out", "n"]))


@conformance("grid-stride-relu", GRID_STRIDE_RELU)
def _():
    cases = []
    for n in SIZES + (20000,):
        x = uniform(n, n)
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((n,), "float32")}, {"n": n}),
                          exact(out=np.maximum(x, np.float32(0)))))
    return cases


MULTI_LAUNCH = submission("""
    extern "C" {
    __global__ void scale(const float* x, float* out, int n, float alpha) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = alpha * x[i];
    }
    __global__ void __launch_bounds__(256) add_row_bias(float* out, const float* bias, int rows,
                                                        int cols) {
        int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
        if (c < cols) out[r * cols + c] += bias[c];
    }
    }
""", launch("scale", ["ceil_div(rows * cols, 64)"], [64], ["x", "out", "n", "alpha"]),
    launch("add_row_bias", ["ceil_div(cols, 32)", "rows"], [32], ["out", "bias", "rows", "cols"]))


@conformance("multi-launch-extern-c-block", MULTI_LAUNCH)
def _():
    cases = []
    for rows, cols in ((1, 1), (3, 33), (17, 100)):
        x, bias = uniform(rows * cols, cols), uniform(cols, rows + 1)
        want = (np.float32(0.5) * x).reshape(rows, cols) + bias
        cases.append(Case(f"{rows}x{cols}", RunCase(
            {"x": x, "bias": bias}, {"out": ((rows, cols), "float32")},
            {"rows": rows, "cols": cols, "n": rows * cols}, {"alpha": 0.5}), exact(out=want)))
    return cases


SCALAR_ARGS = submission("""
    #include <stdint.h>
    extern "C" __global__ void mixed(const double* __restrict__ x, int64_t* __restrict__ out,
                                     uint32_t* __restrict__ bits, double alpha, long long offset,
                                     unsigned int mask, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            out[i] = (int64_t)(x[i] * alpha) + offset;
            bits[i] = ((uint32_t)i * 2654435761u) & mask;
        }
    }
""", launch("mixed", ["ceil_div(n, 128)"], [128], ["x", "out", "bits", "alpha", "offset", "mask", "n"]))


@conformance("scalar-args-double-int64-uint32", SCALAR_ARGS)
def _():
    cases = []
    for n, alpha, offset, mask in ((1, 3.25, -(2**40), 0xFFFF), (1000, -1e6, 7, 0xF0F0F0F0)):
        x = rng(n).uniform(-100, 100, n)
        want = np.trunc(x * alpha).astype(np.int64) + offset
        bits = ((np.arange(n, dtype=np.uint64) * 2654435761) % 2**32).astype(np.uint32) & np.uint32(mask)
        cases.append(Case(f"n={n}", RunCase(
            {"x": x}, {"out": ((n,), "int64"), "bits": ((n,), "uint32")}, {"n": n},
            {"alpha": alpha, "offset": offset, "mask": mask}), exact(out=want, bits=bits)))
    return cases


MASK_BOOL_UINT8 = submission("""
    extern "C" __global__ void quantize(const float* x, bool* positive, unsigned char* q, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        positive[i] = x[i] > 0.0f;
        float v = fminf(fmaxf(x[i] * 100.0f + 128.0f, 0.0f), 255.0f);
        q[i] = (unsigned char)v;
    }
""", launch("quantize", ["ceil_div(n, 64)"], [64], ["x", "positive", "q", "n"]))


@conformance("bool-and-uint8-outputs", MASK_BOOL_UINT8)
def _():
    cases = []
    for n in SIZES:
        x = uniform(n, n, -2, 2)
        q = np.clip(x * np.float32(100) + np.float32(128), 0, 255).astype(np.uint8)
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"positive": ((n,), "bool"), "q": ((n,), "uint8")},
                                            {"n": n}), exact(positive=x > 0, q=q)))
    return cases


# ============================================================================ shared memory and barriers

STATIC_SHARED_REVERSE = submission("""
    extern "C" __global__ void reverse_blocks(const float* x, float* out, int n) {
        __shared__ float tile[128];
        int base = blockIdx.x * 128, t = threadIdx.x;
        tile[t] = base + t < n ? x[base + t] : -1.0f;
        __syncthreads();
        if (base + t < n) out[base + t] = tile[127 - t];
    }
""", launch("reverse_blocks", ["ceil_div(n, 128)"], [128], ["x", "out", "n"]))


@conformance("static-shared-block-reverse", STATIC_SHARED_REVERSE)
def _():
    cases = []
    for n in SIZES:
        x = uniform(n, n)
        padded = np.full(-(-n // 128) * 128, -1.0, np.float32)
        padded[:n] = x
        want = padded.reshape(-1, 128)[:, ::-1].reshape(-1)[:n]
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((n,), "float32")}, {"n": n}),
                          exact(out=want)))
    return cases


DYNAMIC_SHARED = submission("""
    extern "C" __global__ void block_sums(const float* x, float* sums, int* positives, int n) {
        extern __shared__ __align__(16) unsigned char smem[];
        float* fs = reinterpret_cast<float*>(smem);
        int* is = reinterpret_cast<int*>(fs + blockDim.x);
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        float v = i < n ? x[i] : 0.0f;
        fs[t] = v;
        is[t] = v > 0.0f;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (t < s) { fs[t] += fs[t + s]; is[t] += is[t + s]; }
            __syncthreads();
        }
        if (t == 0) { sums[blockIdx.x] = fs[0]; positives[blockIdx.x] = is[0]; }
    }
""", launch("block_sums", ["ceil_div(n, threads)"], ["threads"], ["x", "sums", "positives", "n"],
            shared_bytes="threads * 8"))


@conformance("extern-shared-dynamic-bytes", DYNAMIC_SHARED)
def _():
    cases = []
    for n, threads in ((1, 32), (1000, 64), (4099, 256), (3000, 1024)):
        x = rng(n).integers(-8, 9, n).astype(np.float32)  # small integers: sums are exact
        blocks = -(-n // threads)
        padded = np.zeros(blocks * threads, np.float32)
        padded[:n] = x
        cases.append(Case(f"n={n}-threads={threads}", RunCase(
            {"x": x}, {"sums": ((blocks,), "float32"), "positives": ((blocks,), "int32")},
            {"n": n, "threads": threads}),
            exact(sums=padded.reshape(blocks, threads).sum(1).astype(np.float32),
                  positives=(padded.reshape(blocks, threads) > 0).sum(1).astype(np.int32))))
    return cases


SYNC_PREDICATES = submission("""
    extern "C" __global__ void votes(const float* x, int* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int p = i < n && x[i] > 0.0f;
        int count = __syncthreads_count(p);
        int all = __syncthreads_and(p);
        int any = __syncthreads_or(p);
        if (threadIdx.x == 0) {
            out[3 * blockIdx.x] = count;
            out[3 * blockIdx.x + 1] = all != 0;
            out[3 * blockIdx.x + 2] = any != 0;
        }
    }
""", launch("votes", ["ceil_div(n, 128)"], [128], ["x", "out", "n"]))


@conformance("syncthreads-count-and-or", SYNC_PREDICATES)
def _():
    cases = []
    for n in SIZES:
        x = uniform(n, n)
        if n > 256:
            x[:128] = 1.0    # block 0: every thread true
            x[128:256] = -1.0  # block 1: every thread false
        blocks = -(-n // 128)
        p = np.zeros(blocks * 128, bool)
        p[:n] = x > 0
        p = p.reshape(blocks, 128)
        want = np.stack([p.sum(1), p.all(1), p.any(1)], 1).astype(np.int32).reshape(-1)
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((3 * blocks,), "int32")}, {"n": n}),
                          exact(out=want)))
    return cases


DEVICE_TEMPLATE = submission("""
    template <int BLOCK>
    __device__ float block_sum(float v, float* smem) {
        smem[threadIdx.x] = v;
        __syncthreads();
    #pragma unroll
        for (int s = BLOCK / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
            __syncthreads();
        }
        float total = smem[0];
        __syncthreads();
        return total;
    }

    extern "C" __global__ void row_stats(const float* __restrict__ x, float* __restrict__ mean,
                                         float* __restrict__ var, int rows, int cols) {
        __shared__ float smem[128];
        const float* row = x + (size_t)blockIdx.x * cols;
        float acc = 0.0f;
        for (int c = threadIdx.x; c < cols; c += 128) acc += row[c];
        float mu = block_sum<128>(acc, smem) / cols;
        float sq = 0.0f;
        for (int c = threadIdx.x; c < cols; c += 128) sq += (row[c] - mu) * (row[c] - mu);
        float v = block_sum<128>(sq, smem) / cols;
        if (threadIdx.x == 0) { mean[blockIdx.x] = mu; var[blockIdx.x] = v; }
    }
""", launch("row_stats", ["rows"], [128], ["x", "mean", "var", "rows", "cols"]))


@conformance("device-template-block-sum", DEVICE_TEMPLATE)
def _():
    cases = []
    for rows, cols in ((1, 1), (3, 1000), (5, 4099)):
        x = uniform(rows * cols, cols, 0, 4).reshape(rows, cols)
        x64 = x.astype(np.float64)
        cases.append(Case(f"{rows}x{cols}", RunCase(
            {"x": x}, {"mean": ((rows,), "float32"), "var": ((rows,), "float32")},
            {"rows": rows, "cols": cols}),
            close(rtol=1e-5, atol=1e-6, mean=x64.mean(1), var=x64.var(1))))
    return cases


TILED_MATMUL = submission("""
    #define TILE 16
    extern "C" __global__ void matmul(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int M, int K, int N) {
        __shared__ float as[TILE][TILE];
        __shared__ float bs[TILE][TILE];
        int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
        float acc = 0.0f;
        for (int k0 = 0; k0 < K; k0 += TILE) {
            as[threadIdx.y][threadIdx.x] = row < M && k0 + threadIdx.x < K ? a[row * K + k0 + threadIdx.x] : 0.0f;
            bs[threadIdx.y][threadIdx.x] = col < N && k0 + threadIdx.y < K ? b[(k0 + threadIdx.y) * N + col] : 0.0f;
            __syncthreads();
    #pragma unroll
            for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
            __syncthreads();
        }
        if (row < M && col < N) c[row * N + col] = acc;
    }
""", launch("matmul", ["ceil_div(N, 16)", "ceil_div(M, 16)"], [16, 16], ["a", "b", "c", "M", "K", "N"]))


@conformance("tiled-matmul-2d-shared", TILED_MATMUL)
def _():
    cases = []
    for m, k, n in ((1, 1, 1), (37, 53, 45), (64, 32, 16)):
        a, b = uniform(m * k, m).reshape(m, k), uniform(k * n, n).reshape(k, n)
        cases.append(Case(f"{m}x{k}x{n}", RunCase(
            {"a": a, "b": b}, {"c": ((m, n), "float32")}, {"M": m, "K": k, "N": n}),
            close(rtol=1e-5, atol=1e-5, c=a.astype(np.float64) @ b.astype(np.float64))))
    return cases


# ============================================================================ warp collectives

FULL = "0xffffffffu"

SYNCWARP = submission(f"""
    extern "C" __global__ void rotate_in_warp(const int* x, int* out) {{
        __shared__ int buf[64];
        int t = threadIdx.x, lane = t % warpSize, warp = t / warpSize;
        buf[t] = x[blockIdx.x * 64 + t];
        __syncwarp();
        int v = buf[warp * 32 + (lane + 1) % 32];
        __syncwarp({FULL});
        out[blockIdx.x * 64 + t] = v;
    }}
""", launch("rotate_in_warp", ["blocks"], [64], ["x", "out"]))


@conformance("syncwarp-shared-rotate", SYNCWARP)
def _():
    x = np.arange(3 * 64, dtype=np.int32) * 7
    want = np.roll(x.reshape(-1, 32), -1, axis=1).reshape(-1)
    return [Case("3 blocks", RunCase({"x": x}, {"out": ((192,), "int32")}, {"blocks": 3}), exact(out=want))]


SHFL_IDX = submission(f"""
    extern "C" __global__ void shuffles(const float* x, float* bcast, float* seg, float* perm, int n) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
        float v = i < n ? x[i] : 0.0f;
        float b = __shfl_sync({FULL}, v, 0);
        float s = __shfl_sync({FULL}, v, 3, 8);
        float p = __shfl_sync({FULL}, v, (lane * 7) % 32);
        if (i < n) {{ bcast[i] = b; seg[i] = s; perm[i] = p; }}
    }}
""", launch("shuffles", ["ceil_div(n, 64)"], [64], ["x", "bcast", "seg", "perm", "n"]))


@conformance("shfl-sync-broadcast-width8-permute", SHFL_IDX)
def _():
    cases = []
    for n in (64, 1000):
        x = uniform(n, n)
        padded = np.zeros(-(-n // 64) * 64, np.float32)
        padded[:n] = x
        w = padded.reshape(-1, 32)
        lanes = np.arange(32)
        want = {"bcast": np.repeat(w[:, :1], 32, 1), "seg": np.repeat(w.reshape(-1, 8)[:, 3:4], 8, 1),
                "perm": w[:, (lanes * 7) % 32]}
        want = {k: v.reshape(-1)[:n] for k, v in want.items()}
        cases.append(Case(f"n={n}", RunCase({"x": x}, {k: ((n,), "float32") for k in want}, {"n": n}),
                          exact(**want)))
    return cases


SHFL_UP_SCAN = submission(f"""
    extern "C" __global__ void warp_scan(const int* x, int* scan32, int* scan16, int n) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
        int a = i < n ? x[i] : 0, b = a;
        for (int d = 1; d < 32; d <<= 1) {{
            int t = __shfl_up_sync({FULL}, a, d);
            if (lane >= d) a += t;
        }}
        for (int d = 1; d < 16; d <<= 1) {{
            int t = __shfl_up_sync({FULL}, b, d, 16);
            if ((lane & 15) >= d) b += t;
        }}
        if (i < n) {{ scan32[i] = a; scan16[i] = b; }}
    }}
""", launch("warp_scan", ["ceil_div(n, 128)"], [128], ["x", "scan32", "scan16", "n"]))


@conformance("shfl-up-inclusive-scan-width32-16", SHFL_UP_SCAN)
def _():
    cases = []
    for n in SIZES:
        x = rng(n).integers(-1000, 1000, n).astype(np.int32)
        padded = np.zeros(-(-n // 128) * 128, np.int32)
        padded[:n] = x
        s32 = np.cumsum(padded.reshape(-1, 32), 1, dtype=np.int32).reshape(-1)[:n]
        s16 = np.cumsum(padded.reshape(-1, 16), 1, dtype=np.int32).reshape(-1)[:n]
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"scan32": ((n,), "int32"), "scan16": ((n,), "int32")},
                                            {"n": n}), exact(scan32=s32, scan16=s16)))
    return cases


SHFL_DOWN_REDUCE = submission(f"""
    extern "C" __global__ void warp_sums(const float* x, const double* y, float* fsum, double* dsum,
                                         float* half_sums, int n) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
        float v = i < n ? x[i] : 0.0f, h = v;
        double d = i < n ? y[i] : 0.0;
        for (int off = 16; off > 0; off >>= 1) {{
            v += __shfl_down_sync({FULL}, v, off);
            d += __shfl_down_sync({FULL}, d, off);
        }}
        for (int off = 8; off > 0; off >>= 1) h += __shfl_down_sync({FULL}, h, off, 16);
        int w = i / 32;
        if (lane == 0) {{ fsum[w] = v; dsum[w] = d; }}
        if ((lane & 15) == 0) half_sums[i / 16] = h;
    }}
""", launch("warp_sums", ["ceil_div(n, 64)"], [64], ["x", "y", "fsum", "dsum", "half_sums", "n"]))


@conformance("shfl-down-reduce-float-double-width16", SHFL_DOWN_REDUCE)
def _():
    cases = []
    for n in (1, 1000, 4099):
        x = rng(n).integers(-50, 50, n).astype(np.float32)   # integers: any order is exact
        y = rng(n + 1).uniform(-1, 1, n)
        threads = -(-n // 64) * 64
        px, py = np.zeros(threads, np.float32), np.zeros(threads)
        px[:n], py[:n] = x, y
        cases.append(Case(f"n={n}", RunCase(
            {"x": x, "y": y},
            {"fsum": ((threads // 32,), "float32"), "dsum": ((threads // 32,), "float64"),
             "half_sums": ((threads // 16,), "float32")}, {"n": n}),
            both(exact(fsum=px.reshape(-1, 32).sum(1), half_sums=px.reshape(-1, 16).sum(1)),
                 close(rtol=1e-14, atol=1e-14, dsum=py.reshape(-1, 32).sum(1)))))
    return cases


SHFL_XOR = submission(f"""
    extern "C" __global__ void group_max(const float* x, float* max8, float* max32, int n) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = i < n ? x[i] : -1e30f, w = v;
        for (int m = 4; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync({FULL}, v, m, 8));
        for (int m = 16; m > 0; m >>= 1) w = fmaxf(w, __shfl_xor_sync({FULL}, w, m));
        if (i < n) {{ max8[i] = v; max32[i] = w; }}
    }}
""", launch("group_max", ["ceil_div(n, 32)"], [32], ["x", "max8", "max32", "n"]))


@conformance("shfl-xor-butterfly-width8-32", SHFL_XOR)
def _():
    cases = []
    for n in (3, 1000):
        x = uniform(n, n)
        p = np.full(-(-n // 32) * 32, -1e30, np.float32)
        p[:n] = x
        m8 = np.repeat(p.reshape(-1, 8).max(1), 8)[:n]
        m32 = np.repeat(p.reshape(-1, 32).max(1), 32)[:n]
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"max8": ((n,), "float32"), "max32": ((n,), "float32")},
                                            {"n": n}), exact(max8=m8, max32=m32)))
    return cases


WARP_VOTES = submission(f"""
    extern "C" __global__ void warp_votes(const float* x, unsigned* ballots, int* flags, int n) {{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int p = i < n && x[i] > 0.0f;
        unsigned b = __ballot_sync({FULL}, p);
        int any = __any_sync({FULL}, p), all = __all_sync({FULL}, p);
        if (threadIdx.x % 32 == 0) {{
            ballots[i / 32] = b;
            flags[2 * (i / 32)] = any != 0;
            flags[2 * (i / 32) + 1] = all != 0;
        }}
    }}
""", launch("warp_votes", ["ceil_div(n, 128)"], [128], ["x", "ballots", "flags", "n"]))


@conformance("ballot-any-all", WARP_VOTES)
def _():
    cases = []
    for n in (3, 1000):
        x = uniform(n, n)
        if n > 64:
            x[:32], x[32:64] = 1.0, -1.0
        p = np.zeros(-(-n // 128) * 128, bool)
        p[:n] = x > 0
        w = p.reshape(-1, 32)
        ballots = (w.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1).astype(np.uint32)
        flags = np.stack([w.any(1), w.all(1)], 1).astype(np.int32).reshape(-1)
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"ballots": ((len(w),), "uint32"),
                                                        "flags": ((2 * len(w),), "int32")}, {"n": n}),
                          exact(ballots=ballots, flags=flags)))
    return cases


ACTIVEMASK = submission("""
    extern "C" __global__ void masked_sum(const int* x, unsigned* masks, int* sums) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned mask = __activemask();
        int v = x[i];
        for (int off = 16; off > 0; off >>= 1) {
            int t = __shfl_down_sync(mask, v, off);
            if ((threadIdx.x % 32) + off < 32 && (mask >> ((threadIdx.x % 32) + off) & 1)) v += t;
        }
        masks[i] = mask;
        if (threadIdx.x % 32 == 0) sums[blockIdx.x * 2 + threadIdx.x / 32] = v;
    }
""", launch("masked_sum", [2], [40], ["x", "masks", "sums"]))


@conformance("activemask-partial-warp", ACTIVEMASK)
def _():
    x = np.arange(80, dtype=np.int32)
    masks = np.array(([0xFFFFFFFF] * 32 + [0xFF] * 8) * 2, np.uint32)
    sums = np.array([x[0:32].sum(), x[32:40].sum(), x[40:72].sum(), x[72:80].sum()], np.int32)
    return [Case("block of 40", RunCase({"x": x}, {"masks": ((80,), "uint32"), "sums": ((4,), "int32")}),
                 exact(masks=masks, sums=sums))]


WARP_SOFTMAX = submission(f"""
    #include <math.h>
    extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {{
        int row = blockIdx.x * blockDim.y + threadIdx.y;
        if (row >= rows) return;
        const float* r = x + (size_t)row * cols;
        float m = -INFINITY;
        for (int c = threadIdx.x; c < cols; c += 32) m = fmaxf(m, r[c]);
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync({FULL}, m, o));
        float s = 0.0f;
        for (int c = threadIdx.x; c < cols; c += 32) s += expf(r[c] - m);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync({FULL}, s, o);
        for (int c = threadIdx.x; c < cols; c += 32) out[(size_t)row * cols + c] = expf(r[c] - m) / s;
    }}
""", launch("softmax_rows", ["ceil_div(rows, 4)"], [32, 4], ["x", "out", "rows", "cols"]))


@conformance("warp-per-row-softmax-threadidx-y", WARP_SOFTMAX)
def _():
    cases = []
    for rows, cols in ((1, 1), (7, 33), (12, 1000)):
        x = uniform(rows * cols, rows, -5, 5).reshape(rows, cols).astype(np.float64)
        e = np.exp(x - x.max(1, keepdims=True))
        cases.append(Case(f"{rows}x{cols}", RunCase(
            {"x": x.astype(np.float32)}, {"out": ((rows, cols), "float32")}, {"rows": rows, "cols": cols}),
            close(rtol=1e-5, atol=1e-7, out=e / e.sum(1, keepdims=True))))
    return cases


# ============================================================================ atomics

HISTOGRAM = submission("""
    extern "C" __global__ void zero(int* hist, int bins) {
        if (threadIdx.x < bins) hist[threadIdx.x] = 0;
    }
    extern "C" __global__ void histogram(const int* x, int* hist, int n, int bins) {
        __shared__ int local[64];
        if (threadIdx.x < bins) local[threadIdx.x] = 0;
        __syncthreads();
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
            atomicAdd(&local[x[i]], 1);
        __syncthreads();
        if (threadIdx.x < bins) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
    }
""", launch("zero", [1], [64], ["hist", "bins"]),
    launch("histogram", [3], [128], ["x", "hist", "n", "bins"]))


@conformance("atomicadd-int-histogram-shared-and-global", HISTOGRAM)
def _():
    cases = []
    for n, bins in ((1, 1), (1000, 16), (4099, 64)):
        x = rng(n).integers(0, bins, n).astype(np.int32)
        cases.append(Case(f"n={n}-bins={bins}", RunCase({"x": x}, {"hist": ((bins,), "int32")},
                                                        {"n": n, "bins": bins}),
                          exact(hist=np.bincount(x, minlength=bins).astype(np.int32))))
    return cases


FLOAT_ATOMIC_SUM = submission("""
    extern "C" __global__ void zero(float* total, double* dtotal) { *total = 0.0f; *dtotal = 0.0; }
    extern "C" __global__ void sum(const float* x, float* total, double* dtotal, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { atomicAdd(total, x[i]); atomicAdd(dtotal, (double)x[i]); }
    }
""", launch("zero", [1], [1], ["total", "dtotal"]),
    launch("sum", ["ceil_div(n, 256)"], [256], ["x", "total", "dtotal", "n"]))


@conformance("atomicadd-float-double-sum", FLOAT_ATOMIC_SUM)
def _():
    cases = []
    for n in SIZES:
        x = uniform(n, n, 0, 1)
        want = np.array([x.astype(np.float64).sum()])
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"total": ((1,), "float32"), "dtotal": ((1,), "float64")},
                                            {"n": n}),
                          both(close(rtol=2e-5, total=want), close(rtol=1e-12, dtotal=want))))
    return cases


INT_ATOMICS = submission("""
    #include <stdint.h>
    extern "C" __global__ void init(int* out, unsigned* uout) {
        out[0] = INT32_MAX; out[1] = INT32_MIN; out[2] = 0; out[3] = -1; out[4] = 0;
        out[5] = -1; out[6] = 0; out[7] = 0;
        uout[0] = 0u; uout[1] = 0xffffffffu; uout[2] = 0u;
    }
    extern "C" __global__ void atomics(const int* x, int* out, unsigned* uout, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int v = x[i];
        atomicMin(&out[0], v);
        atomicMax(&out[1], v);
        atomicSub(&out[2], v);
        atomicExch(&out[3], i);
        int old = out[4], seen;
        while ((seen = atomicCAS(&out[4], old, old + 1)) != old) old = seen;
        atomicAnd(&out[5], ~(1 << (i % 31)));
        atomicOr(&out[6], 1 << (i % 31));
        atomicXor(&out[7], v);
        atomicAdd(&uout[0], (unsigned)(v & 0xff));
        atomicMin(&uout[1], (unsigned)v);
        atomicMax(&uout[2], (unsigned)v);
    }
""", launch("init", [1], [1], ["out", "uout"]),
    launch("atomics", ["ceil_div(n, 64)"], [64], ["x", "out", "uout", "n"]))


@conformance("atomic-min-max-sub-exch-cas-bitwise-unsigned", INT_ATOMICS)
def _():
    cases = []
    for n in SIZES:
        x = rng(n).integers(-(2**30), 2**30, n).astype(np.int32)
        idx = np.arange(n)
        bits = np.bitwise_or.reduce(1 << (idx % 31)) if n else 0
        xor = np.bitwise_xor.reduce(x)
        u = x.view(np.uint32)
        want = np.array([x.min(), x.max(), -x.astype(np.int64).sum(), -1, n, ~bits, bits, xor],
                        np.int64).astype(np.int32)
        uwant = np.array([(u & 0xFF).sum() % 2**32, u.min(), u.max()], np.uint32)

        def check(result, where, want=want, uwant=uwant, n=n):
            out = result.outputs["out"]
            assert 0 <= out[3] < n, f"{where}: atomicExch left {out[3]}, not a thread index"
            out = out.copy()
            out[3] = -1
            assert_same(out, want, f"{where}: out")
            assert_same(result.outputs["uout"], uwant, f"{where}: uout")
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((8,), "int32"), "uout": ((3,), "uint32")},
                                            {"n": n}), check))
    return cases


CAS_FLOAT_MAX = submission("""
    #include <math.h>
    __device__ float atomic_max_float(float* addr, float value) {
        int* as_int = (int*)addr;
        int old = *as_int, assumed;
        do {
            assumed = old;
            if (__int_as_float(assumed) >= value) break;
            old = atomicCAS(as_int, assumed, __float_as_int(value));
        } while (assumed != old);
        return __int_as_float(old);
    }
    extern "C" __global__ void init(float* best) { best[0] = -INFINITY; }
    extern "C" __global__ void reduce_max(const float* x, float* best, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) atomic_max_float(best, x[i]);
    }
""", launch("init", [1], [1], ["best"]),
    launch("reduce_max", ["ceil_div(n, 128)"], [128], ["x", "best", "n"]))


@conformance("atomiccas-float-max", CAS_FLOAT_MAX)
def _():
    cases = []
    for n in SIZES:
        x = uniform(n, n, -100, 100)
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"best": ((1,), "float32")}, {"n": n}),
                          exact(best=np.array([x.max()], np.float32))))
    return cases


# ============================================================================ scratch buffers

TWO_PASS = submission("""
    extern "C" __global__ void partial_sums(const float* x, float* partial, int n) {
        __shared__ float s[256];
        int t = threadIdx.x, i = blockIdx.x * 256 + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t == 0) partial[blockIdx.x] = s[0];
    }
    extern "C" __global__ void final_sum(const float* partial, float* out, int count) {
        __shared__ float s[256];
        int t = threadIdx.x;
        float acc = 0.0f;
        for (int i = t; i < count; i += 256) acc += partial[i];
        s[t] = acc;
        __syncthreads();
        for (int k = 128; k > 0; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t == 0) out[0] = s[0];
    }
""", launch("partial_sums", ["ceil_div(n, 256)"], [256], ["x", "partial", "n"]),
    launch("final_sum", [1], [256], ["partial", "out", "blocks"]),
    scratches=(scratch("partial", "float32", "ceil_div(n, 256)"),))


@conformance("two-pass-reduction-poisoned-scratch", TWO_PASS)
def _():
    cases = []
    for n in SIZES + (70000,):
        x = rng(n).integers(-4, 5, n).astype(np.float32)   # exact in any order
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((1,), "float32")},
                                            {"n": n, "blocks": -(-n // 256)}),
                          exact(out=np.array([x.sum()], np.float32))))
    return cases


ZERO_SCRATCH = submission("""
    extern "C" __global__ void accumulate(const int* idx, const float* w, float* acc, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) atomicAdd(&acc[idx[i]], w[i]);
    }
    extern "C" __global__ void copy_out(const float* acc, const int* raw, float* out, int* poison,
                                        int bins) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < bins) { out[i] = acc[i]; poison[i] = raw[i]; }
    }
""", launch("accumulate", ["ceil_div(n, 128)"], [128], ["idx", "w", "acc", "n"]),
    launch("copy_out", ["ceil_div(bins, 32)"], [32], ["acc", "raw", "out", "poison", "bins"]),
    scratches=(scratch("acc", "float32", "bins", init="zero"), scratch("raw", "int32", "bins")))


@conformance("zero-init-scratch-and-poisoned-scratch", ZERO_SCRATCH)
def _():
    cases = []
    for n, bins in ((1, 5), (1000, 37)):
        idx = rng(n).integers(0, bins, n).astype(np.int32)
        w = rng(n + 1).integers(1, 4, n).astype(np.float32)
        want = np.bincount(idx, weights=w, minlength=bins).astype(np.float32)
        case = RunCase({"idx": idx, "w": w}, {"out": ((bins,), "float32"), "poison": ((bins,), "int32")},
                       {"n": n, "bins": bins})
        poison = Poison(run_case_digest(case), "raw", "int32").values((bins,))   # never written: the case's poison
        cases.append(Case(f"n={n}-bins={bins}", case, exact(out=want, poison=poison)))
    return cases


# ============================================================================ vector types and memory qualifiers

VECTOR_FLOAT4 = submission("""
    extern "C" __global__ void scale4(const float* __restrict__ x, float* __restrict__ out, int n,
                                      float a) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int n4 = n / 4;
        if (i < n4) {
            float4 v = reinterpret_cast<const float4*>(x)[i];
            v.x *= a; v.y *= a; v.z *= a; v.w *= a;
            reinterpret_cast<float4*>(out)[i] = v;
        }
        int tail = n4 * 4 + i;
        if (i < n - n4 * 4) out[tail] = x[tail] * a;
    }
""", launch("scale4", ["ceil_div(n, 256)"], [64], ["x", "out", "n", "a"]))


@conformance("float4-reinterpret-with-tail", VECTOR_FLOAT4)
def _():
    cases = []
    for n in SIZES + (1001, 4096):
        x = uniform(n, n)
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((n,), "float32")}, {"n": n}, {"a": 1.5}),
                          exact(out=x * np.float32(1.5))))
    return cases


VECTOR_PARAMS = submission("""
    extern "C" __global__ void vec_ops(const int4* __restrict__ q, const float2* __restrict__ p,
                                       int* qsum, float* pdot, double2* both, int m) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= m) return;
        int4 a = q[i];
        float2 b = __ldg(&p[i]);
        qsum[i] = a.x + a.y + a.z + a.w;
        pdot[i] = b.x * b.y;
        both[i] = make_double2((double)a.x, (double)b.y);
    }
""", launch("vec_ops", ["ceil_div(m, 32)"], [32], ["q", "p", "qsum", "pdot", "both", "m"]))


@conformance("int4-float2-double2-typed-params-ldg", VECTOR_PARAMS)
def _():
    cases = []
    for m in (1, 3, 1000):
        q = rng(m).integers(-1000, 1000, 4 * m).astype(np.int32)
        p = uniform(2 * m, m)
        both_ = np.stack([q[::4].astype(np.float64), p[1::2].astype(np.float64)], 1).reshape(-1)
        cases.append(Case(f"m={m}", RunCase(
            {"q": q, "p": p}, {"qsum": ((m,), "int32"), "pdot": ((m,), "float32"), "both": ((2 * m,), "float64")},
            {"m": m}),
            exact(qsum=q.reshape(m, 4).sum(1).astype(np.int32), pdot=p[::2] * p[1::2], both=both_)))
    return cases


RESTRICT_LDG_UNROLL = submission("""
    #define ITEMS 4
    extern "C" __global__ void saxpy(const float* __restrict__ x, const float* __restrict__ y,
                                     float* __restrict__ out, float a, int n) {
        int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
    #pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            int i = base + k;
            if (i < n) out[i] = a * __ldg(x + i) + __ldg(&y[i]);
        }
    #pragma unroll 1
        for (int k = 0; k < 1; ++k) {}
    }
""", launch("saxpy", ["ceil_div(n, 512)"], [128], ["x", "y", "out", "a", "n"]))


@conformance("restrict-ldg-pragma-unroll", RESTRICT_LDG_UNROLL)
def _():
    cases = []
    for n in SIZES:
        x, y = uniform(n, n), uniform(n, n + 1)
        cases.append(Case(f"n={n}", RunCase({"x": x, "y": y}, {"out": ((n,), "float32")}, {"n": n}, {"a": -2.5}),
                          exact(out=fma32(-2.5, x, y) if CONTRACTED else np.float32(-2.5) * x + y)))
    return cases


# ============================================================================ half and bfloat16

SPECIAL_FLOATS = np.array([
    0.0, -0.0, 1.0, -1.0, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 1.0 + 2**-8, 1.0 + 3 * 2**-8,   # ties
    65504.0, 65519.0, 65520.0, 1e6, 2**-24, 2**-25, 3 * 2**-26, 2**-14 - 2**-25, 1e-8,
    2**-133, 3.0e38, -3.4e38, np.inf, -np.inf, np.nan, 0.1, 1 / 3, 255.5, 256.5, 257.5,
], np.float32)

HALF_CONVERT = submission("""
    #include <cuda_fp16.h>
    extern "C" __global__ void to_half(const float* x, const double* xd, const __half* h,
                                       __half* out, __half* outd, float* back, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        out[i] = __float2half_rn(x[i]);
        outd[i] = __double2half(xd[i]);
        back[i] = __half2float(h[i]);
    }
""", launch("to_half", ["ceil_div(n, 64)"], [64], ["x", "xd", "h", "out", "outd", "back", "n"]))


@conformance("half-conversions-round-to-nearest-even", HALF_CONVERT)
def _():
    cases = []
    for label, x in (("specials", SPECIAL_FLOATS),
                     ("random", np.concatenate([uniform(4099, 1, -70000, 70000),
                                                uniform(1000, 2, -1e-4, 1e-4)]))):
        n = len(x)
        xd = x.astype(np.float64) * (1 + 2**-30)     # double -> half rounds once, from the double
        h = rng(n).integers(0, 2**16, n).astype(np.uint16).view(np.float16)
        with np.errstate(over="ignore"):
            want = {"out": x.astype(np.float16), "outd": xd.astype(np.float16)}
        cases.append(Case(label, RunCase(
            {"x": x, "xd": xd, "h": h},
            {"out": ((n,), "float16"), "outd": ((n,), "float16"), "back": ((n,), "float32")}, {"n": n}),
            exact(**want, back=h.astype(np.float32))))
    return cases


BF16_CONVERT = submission("""
    #include <cuda_bf16.h>
    extern "C" __global__ void to_bf16(const float* x, const __nv_bfloat16* b, __nv_bfloat16* out,
                                       float* back, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        out[i] = __float2bfloat16(x[i]);
        back[i] = __bfloat162float(b[i]);
    }
""", launch("to_bf16", ["ceil_div(n, 64)"], [64], ["x", "b", "out", "back", "n"]))


@conformance("bf16-conversions-round-to-nearest-even", BF16_CONVERT)
def _():
    cases = []
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.3895314e38, 2**-133, 2**-126 * 1.00390625],
                    np.float32)
    for label, x in (("specials", np.concatenate([SPECIAL_FLOATS, ties])),
                     ("random", uniform(4099, 3, -1e5, 1e5))):
        n = len(x)
        b = rng(n).integers(0, 2**16, n).astype(np.uint16).view(BF16)
        cases.append(Case(label, RunCase({"x": x, "b": b}, {"out": ((n,), "bfloat16"), "back": ((n,), "float32")},
                                         {"n": n}),
                          exact(out=x.astype(BF16), back=b.astype(np.float32))))
    return cases


HALF_ARITH = submission("""
    #include <cuda_fp16.h>
    extern "C" __global__ void half_ops(const __half* a, const __half* b, const __half* c,
                                        __half* out, bool* less, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        __half x = a[i], y = b[i], z = c[i];
        out[0 * n + i] = __hadd(x, y);
        out[1 * n + i] = __hsub(x, y);
        out[2 * n + i] = __hmul(x, y);
        out[3 * n + i] = __hfma(x, y, z);
        out[4 * n + i] = __hneg(x);
        out[5 * n + i] = __hmax(x, y);
        out[6 * n + i] = __hmin(x, y);
        out[7 * n + i] = x * y + z;        // operators: contracted to one HFMA (MUTAGYM_FMA=0: two roundings)
        less[i] = __hlt(x, y);
    }
    extern "C" __global__ void half2_ops(const __half2* a, const __half2* b, __half2* sum,
                                         __half2* prod, int m) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= m) return;
        sum[i] = __hadd2(a[i], b[i]);
        prod[i] = __hmul2(a[i], b[i]);
    }
""", launch("half_ops", ["ceil_div(n, 64)"], [64], ["a", "b", "c", "out", "less", "n"]),
    launch("half2_ops", ["ceil_div(n, 128)"], [64], ["a", "b", "sum", "prod", "m"]))


def _half_operands(n: int, seed: int) -> np.ndarray:
    """Halves with magnitudes in [1/4, 4): every exact result below fits a float64."""
    r = rng(seed)
    return (r.uniform(0.25, 4, n) * r.choice([-1, 1], n)).astype(np.float16)


@conformance("half-arithmetic-intrinsics-and-half2", HALF_ARITH)
def _():
    cases = []
    for n in (2, 1000, 4098):
        a, b, c = (_half_operands(n, s) for s in (n, n + 1, n + 2))
        a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
        f16 = np.float16
        rounded_product = (a64 * b64).astype(f16).astype(np.float64)
        want = np.concatenate([(a64 + b64).astype(f16), (a64 - b64).astype(f16), (a64 * b64).astype(f16),
                               (a64 * b64 + c64).astype(f16), -a, np.maximum(a, b), np.minimum(a, b),
                               (a64 * b64 + c64 if CONTRACTED else rounded_product + c64).astype(f16)])
        cases.append(Case(f"n={n}", RunCase(
            {"a": a, "b": b, "c": c},
            {"out": ((8 * n,), "float16"), "less": ((n,), "bool"), "sum": ((n,), "float16"),
             "prod": ((n,), "float16")}, {"n": n, "m": n // 2}),
            exact(out=want, less=a < b, sum=(a64 + b64).astype(f16), prod=(a64 * b64).astype(f16))))
    return cases


BF16_ARITH = submission("""
    #include <cuda_bf16.h>
    extern "C" __global__ void bf16_ops(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                        const __nv_bfloat16* c, __nv_bfloat16* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        out[0 * n + i] = __hadd(a[i], b[i]);
        out[1 * n + i] = __hmul(a[i], b[i]);
        out[2 * n + i] = __hfma(a[i], b[i], c[i]);
        out[3 * n + i] = __float2bfloat16(__bfloat162float(a[i]) * 3.0f);
    }
""", launch("bf16_ops", ["ceil_div(n, 64)"], [64], ["a", "b", "c", "out", "n"]))


@conformance("bf16-arithmetic-intrinsics", BF16_ARITH)
def _():
    cases = []
    for n in (3, 4099):
        r = rng(n)
        a, b, c = ((r.uniform(0.25, 4, n) * r.choice([-1, 1], n)).astype(BF16) for _ in range(3))
        a32, b32, c32 = (v.astype(np.float32) for v in (a, b, c))   # every result is exact in float32
        want = np.concatenate([(a32 + b32).astype(BF16), (a32 * b32).astype(BF16),
                               (a32 * b32 + c32).astype(BF16), (a32 * np.float32(3)).astype(BF16)])
        cases.append(Case(f"n={n}", RunCase({"a": a, "b": b, "c": c}, {"out": ((4 * n,), "bfloat16")}, {"n": n}),
                          exact(out=want)))
    return cases


# ============================================================================ math and intrinsics

FLOAT_MATH = submission("""
    #include <math.h>
    extern "C" __global__ void float_math(const float* x, const float* y, const float* z, float* out,
                                          int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float a = x[i], b = y[i], c = z[i];
        out[0 * n + i] = expf(a);
        out[1 * n + i] = rsqrtf(b);
        out[2 * n + i] = erff(a);
        out[3 * n + i] = tanhf(a);
        out[4 * n + i] = log1pf(b);
        out[5 * n + i] = powf(b, a);
        out[6 * n + i] = sqrtf(b);
        out[7 * n + i] = logf(b);
        out[8 * n + i] = sinf(a);
        out[9 * n + i] = fmaf(a, b, c);
        out[10 * n + i] = a / b;
        out[11 * n + i] = fminf(a, c);
        out[12 * n + i] = fmaxf(a, c);
        out[13 * n + i] = __expf(a);
        out[14 * n + i] = __fdividef(a, b);
        out[15 * n + i] = __logf(b);
    }
""", launch("float_math", ["ceil_div(n, 128)"], [128], ["x", "y", "z", "out", "n"]))

# ulps allowed per output (CUDA C Programming Guide, "Mathematical Functions", single precision)
FLOAT_MATH_ULPS = (2, 2, 2, 2, 1, 4, 0, 1, 2, 0, 0, 0, 0, None, None, None)


@conformance("float-math-library-and-fast-intrinsics", FLOAT_MATH)
def _():
    cases = []
    for n in (1, 4099):
        x, y, z = uniform(n, n, -3, 3), uniform(n, n + 1, 0.1, 4), uniform(n, n + 2, -3, 3)
        if n > 10:   # fmaf must be fused: (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly, 0 unfused
            x[0], y[0], z[0] = 1 + 2**-12, 1 + 2**-12, -(1 + 2**-11)
        x64, y64, z64 = (v.astype(np.float64) for v in (x, y, z))
        refs = [np.exp(x64), 1 / np.sqrt(y64), np.vectorize(math.erf)(x64), np.tanh(x64), np.log1p(y64), y64 ** x64,
                np.sqrt(y64), np.log(y64), np.sin(x64), x64 * y64 + z64, x64 / y64, np.minimum(x64, z64),
                np.maximum(x64, z64), np.exp(x64), x64 / y64, np.log(y64)]

        def check(result, where, refs=refs, n=n, x=x):
            out = result.outputs["out"].reshape(16, n)
            for k, (ref, ulps) in enumerate(zip(refs, FLOAT_MATH_ULPS)):
                if ulps is None:       # fast intrinsics: reduced accuracy, bounded relative error
                    assert_close(out[k], ref, f"{where}: out[{k}]", rtol=2e-6, atol=1e-7)
                else:
                    assert_close(out[k], ref.astype(np.float32), f"{where}: out[{k}]", ulps=ulps)
            if n > 10:
                assert out[9, 0] == np.float32(2**-24), f"{where}: fmaf is not fused: {out[9, 0]!r}"
        cases.append(Case(f"n={n}", RunCase({"x": x, "y": y, "z": z}, {"out": ((16 * n,), "float32")},
                                            {"n": n}), check))
    return cases


INFINITIES = submission("""
    #include <math.h>
    #ifndef CUDART_INF_F
    #define CUDART_INF_F __int_as_float(0x7f800000)
    #endif
    extern "C" __global__ void infinities(const float* x, float* out, int* flags, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float v = x[i];
        out[0 * n + i] = fminf(v, INFINITY);
        out[1 * n + i] = fmaxf(v, -CUDART_INF_F);
        out[2 * n + i] = 1.0f / v;
        out[3 * n + i] = fmaxf(v, NAN);          // fmaxf ignores a NaN operand
        out[4 * n + i] = fminf(NAN, v);
        out[5 * n + i] = v * CUDART_INF_F;
        flags[2 * i] = isinf(out[2 * n + i]) ? 1 : 0;
        flags[2 * i + 1] = isnan(v) ? 1 : 0;
    }
""", launch("infinities", ["ceil_div(n, 32)"], [32], ["x", "out", "flags", "n"]))


@conformance("infinity-nan-fminf-fmaxf", INFINITIES)
def _():
    x = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3e38, 1e-45], np.float32)
    n = len(x)
    with np.errstate(all="ignore"):
        inv = np.float32(1) / x
        want = np.concatenate([np.fmin(x, np.inf), np.fmax(x, -np.inf), inv, np.fmax(x, np.nan),
                               np.fmin(np.nan, x), x * np.float32(np.inf)]).astype(np.float32)
    flags = np.stack([np.isinf(inv), np.isnan(x)], 1).astype(np.int32).reshape(-1)
    return [Case("specials", RunCase({"x": x}, {"out": ((6 * n,), "float32"), "flags": ((2 * n,), "int32")},
                                     {"n": n}), exact(out=want, flags=flags))]


DOUBLE_MATH = submission("""
    #include <math.h>
    extern "C" __global__ void double_math(const double* x, const double* y, double* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        out[0 * n + i] = exp(x[i]);
        out[1 * n + i] = log(y[i]);
        out[2 * n + i] = sqrt(y[i]);
        out[3 * n + i] = x[i] / y[i];
        out[4 * n + i] = fma(x[i], y[i], 1.0);
        out[5 * n + i] = pow(y[i], 0.5);
    }
""", launch("double_math", ["ceil_div(n, 64)"], [64], ["x", "y", "out", "n"]))


@conformance("double-exp-log-sqrt", DOUBLE_MATH)
def _():
    cases = []
    for n in (1, 1000):
        x, y = rng(n).uniform(-20, 20, n), rng(n + 1).uniform(1e-3, 1e3, n)

        def check(result, where, x=x, y=y, n=n):
            out = result.outputs["out"].reshape(6, n)
            assert_close(out[0], np.exp(x), f"{where}: exp", ulps=1)
            assert_close(out[1], np.log(y), f"{where}: log", ulps=1)
            assert_same(out[2], np.sqrt(y), f"{where}: sqrt (correctly rounded)")
            assert_same(out[3], x / y, f"{where}: division (correctly rounded)")
            assert_close(out[4], x * y + 1.0, f"{where}: fma", rtol=1e-15, atol=1e-15)
            assert_close(out[5], np.sqrt(y), f"{where}: pow", ulps=2)
        cases.append(Case(f"n={n}", RunCase({"x": x, "y": y}, {"out": ((6 * n,), "float64")}, {"n": n}), check))
    return cases


INT_INTRINSICS = submission("""
    extern "C" __global__ void bits(const unsigned* u, const long long* w, int* out, unsigned* uout,
                                    int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned v = u[i];
        out[4 * i] = __popc(v);
        out[4 * i + 1] = __clz((int)v);
        out[4 * i + 2] = __ffs((int)v);
        out[4 * i + 3] = __popcll((unsigned long long)w[i]) + 100 * __clzll(w[i]);
        uout[2 * i] = __brev(v);
        uout[2 * i + 1] = __umulhi(v, 2654435761u);
    }
""", launch("bits", ["ceil_div(n, 64)"], [64], ["u", "w", "out", "uout", "n"]))


@conformance("integer-intrinsics-popc-clz-ffs-brev", INT_INTRINSICS)
def _():
    u = np.concatenate([np.array([0, 1, 0x80000000, 0xFFFFFFFF, 0x00010000], np.uint32),
                        rng(5).integers(0, 2**32, 995, dtype=np.uint64).astype(np.uint32)])
    w = np.concatenate([np.array([0, 1, -1, 2**40], np.int64), rng(6).integers(-(2**62), 2**62, 996)])
    n = len(u)
    popc = np.array([bin(int(v)).count("1") for v in u])
    clz = np.array([32 - int(v).bit_length() for v in u])
    ffs = np.array([(int(v) & -int(v)).bit_length() for v in u])
    w_u = [int(v) % 2**64 for v in w]
    llbits = np.array([bin(v).count("1") + 100 * (64 - v.bit_length()) for v in w_u])
    out = np.stack([popc, clz, ffs, llbits], 1).astype(np.int32).reshape(-1)
    brev = np.array([int(f"{int(v):032b}"[::-1], 2) for v in u], np.uint32)
    mulhi = ((u.astype(np.uint64) * np.uint64(2654435761)) >> np.uint64(32)).astype(np.uint32)
    uout = np.stack([brev, mulhi], 1).reshape(-1)
    return [Case(f"n={n}", RunCase({"u": u, "w": w}, {"out": ((4 * n,), "int32"), "uout": ((2 * n,), "uint32")},
                                   {"n": n}), exact(out=out, uout=uout))]


# ============================================================================ printf

PRINTF = submission("""
    extern "C" __global__ void hello(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (threadIdx.x == 0) printf("block %d of %d\\n", blockIdx.x, gridDim.x);
        if (i < n) {
            out[i] = x[i];
            if (i < 3) printf("x[%d] = %.3f (%s)\\n", i, x[i], x[i] > 0.0f ? "positive" : "not positive");
        }
    }
""", launch("hello", ["ceil_div(n, 32)"], [32], ["x", "out", "n"]))


@conformance("printf-to-stdout", PRINTF)
def _():
    cases = []
    for n in (2, 70):
        x = np.array([1.25, -2.5, 3.0] + [0.0] * (n - 3), np.float32)[:n]
        blocks = -(-n // 32)
        lines = [f"block {b} of {blocks}" for b in range(blocks)]
        lines += [f"x[{i}] = {x[i]:.3f} ({'positive' if x[i] > 0 else 'not positive'})" for i in range(min(n, 3))]

        def check(result, where, x=x, lines=lines):
            assert_same(result.outputs["out"], x, f"{where}: out")
            assert sorted(result.stdout.splitlines()) == sorted(lines), f"{where}: stdout {result.stdout!r}"
        cases.append(Case(f"n={n}", RunCase({"x": x}, {"out": ((n,), "float32")}, {"n": n}), check))
    return cases


# ============================================================================ more edges

SHFL_EDGES = submission(f"""
    extern "C" __global__ void shfl_edges(const int* x, int* out) {{
        int t = threadIdx.x, lane = t % 32;
        int v = x[blockIdx.x * blockDim.x + t];
        int base = (blockIdx.x * blockDim.x + t) * 4;
        out[base + 0] = __shfl_sync({FULL}, v, lane + 9, 8);      // source lane taken modulo width
        out[base + 1] = __shfl_up_sync({FULL}, v, 3, 8);          // below the segment: own value
        out[base + 2] = __shfl_down_sync({FULL}, v, 3, 8);        // past the segment: own value
        out[base + 3] = __shfl_xor_sync({FULL}, v, 8, 8);         // later group: own; earlier: theirs
    }}
""", launch("shfl_edges", [2], [64], ["x", "out"]))


@conformance("shfl-width-edge-semantics", SHFL_EDGES)
def _():
    x = (np.arange(128, dtype=np.int32) * 13 + 5)
    lane = np.arange(128) % 32
    warp = np.arange(128) // 32 * 32
    seg = lane // 8 * 8
    idx = warp + seg + (lane + 9) % 8
    up = np.where(lane % 8 >= 3, np.arange(128) - 3, np.arange(128))
    down = np.where(lane % 8 + 3 < 8, np.arange(128) + 3, np.arange(128))
    src = lane ^ 8
    xor = np.where(src < seg, warp + src, np.arange(128))
    want = np.stack([x[idx], x[up], x[down], x[xor]], 1).reshape(-1)
    return [Case("2 blocks of 64", RunCase({"x": x}, {"out": ((512,), "int32")}), exact(out=want))]


TICKETS = submission("""
    extern "C" __global__ void init(unsigned* counters) { counters[0] = 0u; counters[1] = 0u; counters[2] = 0u; }
    extern "C" __global__ void tickets(unsigned* counters, int* order, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned ticket = atomicAdd(&counters[0], 1u);
        order[ticket] = i;
        atomicInc(&counters[1], 7u);
        atomicDec(&counters[2], 7u);
    }
""", launch("init", [1], [1], ["counters"]),
    launch("tickets", ["ceil_div(n, 64)"], [64], ["counters", "order", "n"]))


@conformance("atomicadd-returns-old-inc-dec-wrap", TICKETS)
def _():
    cases = []
    for n in SIZES:
        def check(result, where, n=n):
            order = result.outputs["order"]
            assert sorted(order.tolist()) == list(range(n)), f"{where}: tickets are not a permutation"
            assert_same(result.outputs["counters"], np.array([n, n % 8, (8 - n % 8) % 8], np.uint32),
                        f"{where}: counters")
        cases.append(Case(f"n={n}", RunCase({}, {"counters": ((3,), "uint32"), "order": ((n,), "int32")},
                                            {"n": n}), check))
    return cases


STATIC_AND_DYNAMIC_SHARED = submission("""
    extern "C" __global__ void both_shared(const float* x, float* out, int n) {
        __shared__ float block_total;
        __shared__ int flags[32];
        extern __shared__ float dyn[];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        dyn[t] = i < n ? x[i] : 0.0f;
        if (t < 32) flags[t] = t;
        if (t == 0) block_total = 0.0f;
        __syncthreads();
        if (t == 0) {
            for (int k = 0; k < blockDim.x; ++k) block_total += dyn[k];
        }
        __syncthreads();
        if (i < n) out[i] = dyn[blockDim.x - 1 - t] + block_total + flags[t % 32];
    }
""", launch("both_shared", ["ceil_div(n, threads)"], ["threads"], ["x", "out", "n"],
            shared_bytes="threads * 4"))


@conformance("static-and-dynamic-shared-together", STATIC_AND_DYNAMIC_SHARED)
def _():
    cases = []
    for n, threads in ((3, 32), (1000, 128), (4099, 512)):
        x = rng(n).integers(-3, 4, n).astype(np.float32)
        blocks = -(-n // threads)
        p = np.zeros(blocks * threads, np.float32)
        p[:n] = x
        p = p.reshape(blocks, threads)
        want = p[:, ::-1] + p.sum(1, keepdims=True) + (np.arange(threads) % 32)
        cases.append(Case(f"n={n}-threads={threads}", RunCase({"x": x}, {"out": ((n,), "float32")},
                                                              {"n": n, "threads": threads}),
                          exact(out=want.reshape(-1)[:n].astype(np.float32))))
    return cases


POISON = submission("""
    extern "C" __global__ void poison(unsigned* seen, float* sparse, int n) {
        __shared__ unsigned s[64];
        int t = threadIdx.x;
        unsigned before = s[t];          // never written in this block yet: poison
        __syncthreads();
        s[t] = blockIdx.x + 1;           // what a later block would see if nobody re-poisoned
        __syncthreads();
        seen[blockIdx.x * 64 + t] = before;
        int i = blockIdx.x * 64 + t;
        if (i < n && i % 2 == 0) sparse[i] = 1.0f;
    }
""", launch("poison", [3], [64], ["seen", "sparse", "n"]))


@conformance("runtime-poisons-shared-memory-and-outputs", POISON)
def _():
    n = 150
    sparse = np.full(n, np.nan, np.float32)
    sparse[::2] = 1.0
    case = RunCase({}, {"seen": ((192,), "uint32"), "sparse": ((n,), "float32")}, {"n": n})
    want_sparse = sparse.view(np.uint32).copy()
    want_sparse[1::2] = initial_output(case, "sparse").view(np.uint32)[1::2]   # unwritten: the case's poison

    def check(result, where):
        assert_same(result.outputs["seen"], np.full(192, 0xFFFFFFFF, np.uint32), f"{where}: shared before write")
        assert_same(result.outputs["sparse"].view(np.uint32), want_sparse, f"{where}: sparse bits")
    return [Case("3 blocks", case, check)]


CONVERSIONS = submission("""
    extern "C" __global__ void conversions(const float* x, const int* k, const long long* w, int* out,
                                           unsigned* uout, long long* lout, float* fout, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float v = x[i];
        out[4 * i + 0] = __float2int_rn(v);
        out[4 * i + 1] = __float2int_rz(v);
        out[4 * i + 2] = __float2int_rd(v);
        out[4 * i + 3] = __float2int_ru(v);
        uout[i] = __float2uint_rn(v);
        lout[i] = __float2ll_rn(v);
        fout[3 * i + 0] = __int2float_rn(k[i]);
        fout[3 * i + 1] = __uint2float_rn((unsigned)k[i]);
        fout[3 * i + 2] = __ll2float_rn(w[i]);
    }
""", launch("conversions", ["ceil_div(n, 32)"], [32], ["x", "k", "w", "out", "uout", "lout", "fout", "n"]))


@conformance("float-int-conversion-intrinsics-saturate", CONVERSIONS)
def _():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.7, -2.7, 3e9, -3e9, 1e20, -1e20, np.nan, np.inf,
                  -np.inf, 16777217.0, 4294967296.0, -1.0, 0.0, 1e-30], np.float32)
    n = len(x)
    k = np.array([16777217, -16777217, 2**31 - 1, -(2**31), 33554435, 7] + [0] * (n - 6), np.int32)
    w = np.array([2**53 + 1, -(2**60) - 1, 2**63 - 1, -(2**63), 2**24 + 1, 3] + [0] * (n - 6), np.int64)
    x64 = x.astype(np.float64)

    def saturate(r, low, high):
        r = np.where(np.isnan(r), 0, r)
        return np.clip(r, low, high)
    i32 = [saturate(f(x64), -(2**31), 2**31 - 1).astype(np.int64).astype(np.int32)
           for f in (np.rint, np.trunc, np.floor, np.ceil)]
    u32 = saturate(np.rint(x64), 0, 2**32 - 1).astype(np.int64).astype(np.uint32)
    r = np.rint(np.where(np.isnan(x64), 0, x64))
    i64 = np.array([2**63 - 1 if v >= 2**63 else -(2**63) if v <= -(2**63) else int(v) for v in r], np.int64)
    # int -> float: numpy's casts round to nearest even; int64 via Python's exact int -> float
    ll = np.array([float(np.float32(float(int(v)))) if abs(int(v)) < 2**53 else
                   _round_int_to_float32(int(v)) for v in w], np.float32)
    fout = np.stack([k.astype(np.float32), k.view(np.uint32).astype(np.float32), ll], 1).reshape(-1)
    return [Case("specials", RunCase(
        {"x": x, "k": k, "w": w},
        {"out": ((4 * n,), "int32"), "uout": ((n,), "uint32"), "lout": ((n,), "int64"), "fout": ((3 * n,), "float32")},
        {"n": n}), exact(out=np.stack(i32, 1).reshape(-1), uout=u32, lout=i64, fout=fout))]


def _round_int_to_float32(v: int) -> float:
    """Round a Python int to the nearest float32, ties to even, exactly."""
    from fractions import Fraction
    lo = np.float32(float(v))           # float() rounds to nearest double; fix up to float32 below
    candidates = {lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))}
    best = min(candidates, key=lambda c: (abs(Fraction(int(c)) - v), int(np.float32(c).view(np.uint32)) & 1))
    return float(best)


INT_BUILTINS = submission("""
    extern "C" __global__ void int_builtins(const int* a, const int* b, const unsigned* u, int* out,
                                            unsigned* uout, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int x = a[i], y = b[i];
        out[4 * i + 0] = min(x, y);
        out[4 * i + 1] = max(x, y);
        out[4 * i + 2] = abs(x);
        out[4 * i + 3] = __mul24(x % (1 << 23), y % (1 << 23));
        unsigned p = u[i], q = u[(i + 1) % n];
        uout[5 * i + 0] = umin(p, q);
        uout[5 * i + 1] = __byte_perm(p, q, 0x7531u);
        uout[5 * i + 2] = __funnelshift_l(p, q, (unsigned)i);
        uout[5 * i + 3] = __funnelshift_r(p, q, (unsigned)i);
        uout[5 * i + 4] = __sad(x, y, 7u);
    }
""", launch("int_builtins", ["ceil_div(n, 64)"], [64], ["a", "b", "u", "out", "uout", "n"]))


@conformance("int-min-max-abs-byte-perm-funnelshift-mul24-sad", INT_BUILTINS)
def _():
    n = 500
    a = rng(1).integers(-(2**30), 2**30, n).astype(np.int32)
    b = rng(2).integers(-(2**30), 2**30, n).astype(np.int32)
    u = rng(3).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[0], b[0] = -(2**31) + 1, 5
    ai, bi = a.astype(np.int64), b.astype(np.int64)
    am, bm = np.fmod(ai, 2**23), np.fmod(bi, 2**23)      # C's % truncates toward zero
    mul24 = (am * bm).astype(np.int64) % 2**32
    out = np.stack([np.minimum(a, b), np.maximum(a, b), np.abs(a), mul24.astype(np.uint32).view(np.int32)], 1)
    uout = []
    for i in range(n):
        p, q = int(u[i]), int(u[(i + 1) % n])
        v = (q << 32) | p
        perm = sum(((v >> (8 * sel)) & 0xFF) << (8 * k) for k, sel in enumerate((1, 3, 5, 7)))
        sh = i & 31
        fl = ((v << sh) >> 32) & 0xFFFFFFFF
        fr = (v >> sh) & 0xFFFFFFFF
        sad = (abs(int(a[i]) - int(b[i])) + 7) % 2**32
        uout.append([min(p, q), perm, fl, fr, sad])
    return [Case(f"n={n}", RunCase({"a": a, "b": b, "u": u}, {"out": ((4 * n,), "int32"), "uout": ((5 * n,), "uint32")},
                                   {"n": n}),
                 exact(out=out.astype(np.int32).reshape(-1), uout=np.array(uout, np.uint32).reshape(-1)))]


FAST_TRIG = submission("""
    #include <math.h>
    extern "C" __global__ void trig(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float v = x[i], s, c;
        sincosf(v, &s, &c);
        out[0 * n + i] = s;
        out[1 * n + i] = c;
        out[2 * n + i] = __sinf(v);
        out[3 * n + i] = __cosf(v);
        out[4 * n + i] = __frcp_rn(v);
        out[5 * n + i] = __fsqrt_rn(fabsf(v));
        out[6 * n + i] = __fmul_rn(v, v);
        out[7 * n + i] = __saturatef(v);
    }
""", launch("trig", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))


@conformance("sincosf-fast-trig-rn-intrinsics-saturate", FAST_TRIG)
def _():
    x = np.concatenate([uniform(2000, 9, -3.1, 3.1), np.array([0.5, 1.0, -0.0, 2.0], np.float32)])
    n = len(x)
    x64 = x.astype(np.float64)

    def check(result, where):
        out = result.outputs["out"].reshape(8, n)
        assert_close(out[0], np.sin(x64), f"{where}: sincosf sin", ulps=2)
        assert_close(out[1], np.cos(x64), f"{where}: sincosf cos", ulps=2)
        assert_close(out[2], np.sin(x64), f"{where}: __sinf", atol=2**-21.41 + 1e-7)
        assert_close(out[3], np.cos(x64), f"{where}: __cosf", atol=2**-21.41 + 1e-7)
        with np.errstate(divide="ignore"):
            assert_same(out[4], (1 / x64).astype(np.float32), f"{where}: __frcp_rn")
        assert_same(out[5], np.sqrt(np.abs(x64)).astype(np.float32), f"{where}: __fsqrt_rn")
        assert_same(out[6], x * x, f"{where}: __fmul_rn")
        assert_close(out[7], np.clip(x, 0, 1), f"{where}: __saturatef")   # by value: -0.0 may stay -0.0
    return [Case(f"n={n}", RunCase({"x": x}, {"out": ((8 * n,), "float32")}, {"n": n}), check)]


# ============================================================================ tests

IDS = [c.id for c in CONFORMANCE]
assert len(set(IDS)) == len(IDS), "conformance ids must be unique"


def test_suite_is_large_enough():
    """The suite holds at least 30 kernels."""
    assert len(CONFORMANCE) >= 30, len(CONFORMANCE)


@pytest.mark.parametrize("conf", CONFORMANCE, ids=IDS)
def test_kernel_matches_numpy(conf: Conformance):
    """Every case's outputs match numpy under every schedule; printf output is captured."""
    kernel = compiled(conf.source)
    cases = conf.cases()
    for schedule in conf.schedules:
        results = kernel.run_batch([c.run for c in cases], schedule=schedule, timeout_s=20)
        for case, result in zip(cases, results):
            where = f"{conf.id} [{case.label}, {schedule}]"
            assert result.outcome == "ok", f"{where}: {result.outcome}: {result.message}"
            case.check(result, where)


@pytest.mark.parametrize("conf", CONFORMANCE, ids=IDS)
def test_nvrtc_accepts(conf: Conformance):
    """The same text compiles with NVRTC to PTX holding every launched kernel."""
    ptx = nvrtc_compile(conf.source).ptx
    for name in {k for k in re.findall(r'kernel = "(\w+)"', conf.source)}:
        assert f".entry {name}(" in ptx, name


SYNTAX_ERROR = submission("""
    extern "C" __global__ void broken(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = x[i] * ;
    }
""", launch("broken", ["ceil_div(n, 64)"], [64], ["x", "out", "n"]))
SYNTAX_ERROR_LINE = SYNTAX_ERROR.splitlines().index("    if (i < n) out[i] = x[i] * ;") + 1


def test_syntax_error_rejected_by_gxx_with_line():
    """g++ (the emulator's compiler) rejects a dangling operator and names the submission's line."""
    with pytest.raises(CompileError, match=rf"g\+\+ rejected the kernel: submission\.cu:"
                                           rf"{SYNTAX_ERROR_LINE}:\d+: error: expected primary-expression") as info:
        compile(SYNTAX_ERROR, backend="cpu")
    assert f"submission.cu:{SYNTAX_ERROR_LINE}:" in info.value.log


def test_syntax_error_rejected_by_nvrtc_with_line():
    """NVRTC rejects the same text; `.line` and the message name the line, `.log` has the log."""
    with pytest.raises(CompileError, match=rf'^line {SYNTAX_ERROR_LINE}: NVRTC rejected the kernel: '
                                           r'expected an expression') as info:
        nvrtc_compile(SYNTAX_ERROR)
    assert info.value.line == SYNTAX_ERROR_LINE
    assert f"submission.cu({SYNTAX_ERROR_LINE}): error" in info.value.log


def test_ulp_distance_helper():
    """The ulp helper counts representable steps, across zero too."""
    one = np.array([1.0], np.float32)
    assert ulp_distance(np.nextafter(one, np.float32(2)), one)[0] == 1
    tiny = np.array([np.float32(1e-45)])
    assert ulp_distance(-tiny, tiny)[0] == 2
    assert math.isclose(float(ulp_distance(np.array([2.0]), np.array([1.0]))[0]), 2**52)


ACTIVEMASK_CONVERGED = submission("""
    extern "C" __global__ void k(unsigned* out) {
        out[blockIdx.x * blockDim.x + threadIdx.x] = __activemask();
    }
""", launch("k", [1], [40], ["out"]))


@pytest.mark.parametrize("schedule", ["ascending", "descending"])
def test_activemask_in_converged_code_is_the_whole_warp(schedule):
    """Every lane of a converged warp is active: __activemask() is the full (existing-lane) mask."""
    r = compiled(ACTIVEMASK_CONVERGED).run({}, {"out": ((40,), "uint32")}, {}, schedule=schedule)
    assert r.ok, r.message
    assert_same(r.outputs["out"], np.array([0xFFFFFFFF] * 32 + [0xFF] * 8, np.uint32), f"masks [{schedule}]")


CUDART_INF_BARE = submission("""
    extern "C" __global__ void k(float* out) { out[threadIdx.x] = -CUDART_INF_F; }
""", launch("k", [1], [4], ["out"]))


def test_cudart_inf_f_compiles_on_both_backends():
    """A text the emulator accepts is accepted by NVRTC too (the design's same-text promise)."""
    r = compiled(CUDART_INF_BARE).run({}, {"out": ((4,), "float32")}, {})
    assert r.ok and np.all(r.outputs["out"] == -np.inf)
    nvrtc_compile(CUDART_INF_BARE)
