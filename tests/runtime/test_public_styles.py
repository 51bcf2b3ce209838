"""Kernels in the styles public CUDA code is written in, run as written (issue 16, items 1 and 4).

Each entry is a kernel written here in a style found in public repositories (CUDA samples, course
lectures, llm.c-like code): cooperative-groups block reductions (`tiled_partition<32>` and
`cg::reduce`), a warp scan with `shfl_up`, `coalesced_threads()` atomic aggregation, the
`SharedMemory<T>` helper in a templated reduction (behind an `extern "C"` entry: template entry
points are a separate feature), `FLT_MAX` / `INFINITY` / `INT_MAX` with `<cfloat>`, `<climits>`,
device `memcpy` / `memset`, `printf` with `<stdio.h>`, `assert`, the rounding-mode intrinsics, a
grid-stride loop over `this_grid()`. `test_matches_reference` runs each under three thread orders
and compares it with a numpy / fp64 reference; `test_nvrtc_accepts` compiles the same text with
the real NVRTC (and CUDA's own cooperative_groups.h), so each is CUDA as NVRTC sees it too.

A kernel whose cooperative groups synchronise, without naming `__syncthreads` or a `_sync`
intrinsic itself, needs the emulator's fibers; until the submission parser grants them for
cooperative groups (`Submission.uses_barriers`), such a kernel stops with a sync_error saying so,
and exactly that ending is an expected failure (any other ending fails as usual).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from mutagym.runtime import RunCase, RunResult
from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.runtime.submission import parse_submission
from submission_text import compiled, launch, scratch, submission

SCHEDULES = ("ascending", "descending", "shuffled:11")
CG = "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\nnamespace cg = cooperative_groups;\n"


@dataclass(frozen=True)
class Style:
    id: str
    source: str
    cases: Callable[[], list[tuple[str, RunCase, Callable[[RunResult], None]]]]


STYLES: list[Style] = []


def style(id: str, source: str):  # noqa: A002
    def register(cases):
        STYLES.append(Style(id, source, cases))
        return cases
    return register


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def close(got: np.ndarray, want: np.ndarray, what: str, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    ok = np.abs(got.astype(np.float64) - want) <= atol + rtol * np.abs(want)
    assert ok.all(), f"{what}: {int((~ok).sum())} of {ok.size} off; first {got[~ok][:3]} vs {want[~ok][:3]}"


def equal(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and (got == want).all(), f"{what}: got {got[:8]}, want {want[:8]}"


# ============================================================================ cooperative groups

CG_BLOCK_SUM = submission(CG + """
    // One partial sum per block: a warp reduces with cg::reduce, lane 0 of each warp stores its
    // sum, the first warp reduces the partials.
    extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ partial, int n) {
        cg::thread_block block = cg::this_thread_block();
        cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
        __shared__ float warp_sums[32];
        float v = 0.0f;
        for (int i = blockIdx.x * blockDim.x + block.thread_rank(); i < n; i += blockDim.x * gridDim.x)
            v += x[i];
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = v;
        block.sync();
        if (warp.meta_group_rank() == 0) {
            v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.0f;
            v = cg::reduce(warp, v, cg::plus<float>());
            if (warp.thread_rank() == 0) partial[blockIdx.x] = v;
        }
    }
""", launch("block_sum", [8], [256], ["x", "partial", "n"]))


@style("cg-block-reduce-tiled-partition", CG_BLOCK_SUM)
def _():
    cases = []
    for n in (1, 100, 5000, 70000):
        x = rng(n).standard_normal(n).astype(np.float32)
        want = x.astype(np.float64).reshape(-1)

        def check(r, want=want, n=n):
            partial = r.outputs["partial"].astype(np.float64)
            close(np.array([partial.sum()]), np.array([want.sum()]), f"sum n={n}", rtol=1e-5, atol=1e-4)
        cases.append((f"n={n}", RunCase({"x": x}, {"partial": ((8,), "float32")}, {"n": n}), check))
    return cases


CG_MINMAX = submission(CG + """
    #include <cfloat>
    #include <climits>
    // Per-row maximum, minimum and arg-maximum: cg::greater / cg::less reduce each row's tile,
    // started from -INFINITY, FLT_MAX and INT_MAX as such kernels do.
    extern "C" __global__ void row_stats(const float* x, float* mx, float* mn, int* amax, int cols) {
        auto tile = cg::tiled_partition<16>(cg::this_thread_block());
        int row = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
        float hi = -INFINITY, lo = FLT_MAX;
        for (int c = tile.thread_rank(); c < cols; c += tile.size()) {
            hi = fmaxf(hi, x[row * cols + c]);
            lo = fminf(lo, x[row * cols + c]);
        }
        hi = cg::reduce(tile, hi, cg::greater<float>());
        lo = cg::reduce(tile, lo, cg::less<float>());
        int first = INT_MAX;
        for (int c = tile.thread_rank(); c < cols; c += tile.size())
            if (x[row * cols + c] == hi) first = min(first, c);
        first = cg::reduce(tile, first, cg::less<int>());
        if (tile.thread_rank() == 0) { mx[row] = hi; mn[row] = lo; amax[row] = first; }
    }
""", launch("row_stats", ["rows // 4"], [64], ["x", "mx", "mn", "amax", "cols"]))


@style("cg-reduce-greater-less-flt-max-infinity", CG_MINMAX)
def _():
    cases = []
    for rows, cols in ((4, 1), (8, 37), (16, 300)):
        x = rng(cols).standard_normal((rows, cols)).astype(np.float32)
        x[0, -1] = x[0].max()   # a tie: the first index wins

        def check(r, x=x):
            equal(r.outputs["mx"], x.max(axis=1), "max")
            equal(r.outputs["mn"], x.min(axis=1), "min")
            equal(r.outputs["amax"], x.argmax(axis=1).astype(np.int32), "argmax")
        cases.append((f"{rows}x{cols}", RunCase(
            {"x": x}, {"mx": ((rows,), "float32"), "mn": ((rows,), "float32"), "amax": ((rows,), "int32")},
            {"rows": rows, "cols": cols}), check))
    return cases


CG_WARP_SCAN = submission(CG + """
    #include <cooperative_groups/scan.h>
    // Inclusive prefix sums within each warp: by hand with shfl_up (Hillis-Steele), and with
    // cg::inclusive_scan / cg::exclusive_scan; integers, so every order gives the same bits.
    extern "C" __global__ void warp_scan(const int* x, int* by_hand, int* inclusive, int* exclusive, int n) {
        cg::thread_block block = cg::this_thread_block();
        auto warp = cg::tiled_partition<32>(block);
        int i = blockIdx.x * blockDim.x + block.thread_rank();
        int v = i < n ? x[i] : 0;
        int s = v;
        for (int d = 1; d < 32; d <<= 1) {
            int below = warp.shfl_up(s, d);
            if (warp.thread_rank() >= d) s += below;
        }
        int inc = cg::inclusive_scan(warp, v);
        int exc = cg::exclusive_scan(warp, v);
        if (i < n) { by_hand[i] = s; inclusive[i] = inc; exclusive[i] = exc; }
    }
""", launch("warp_scan", ["ceil_div(n, 128)"], [128], ["x", "by_hand", "inclusive", "exclusive", "n"]))


@style("cg-warp-scan-shfl-up", CG_WARP_SCAN)
def _():
    cases = []
    for n in (1, 31, 200, 1000):
        x = rng(n).integers(-50, 50, n).astype(np.int32)
        padded = np.zeros(-(-n // 32) * 32, np.int32)
        padded[:n] = x
        inc = np.cumsum(padded.reshape(-1, 32), axis=1).reshape(-1)[:n].astype(np.int32)

        def check(r, inc=inc, x=x):
            equal(r.outputs["by_hand"], inc, "shfl_up scan")
            equal(r.outputs["inclusive"], inc, "inclusive_scan")
            equal(r.outputs["exclusive"], inc - x, "exclusive_scan")
        outs = {k: ((n,), "int32") for k in ("by_hand", "inclusive", "exclusive")}
        cases.append((f"n={n}", RunCase({"x": x}, outs, {"n": n}), check))
    return cases


CG_AGGREGATE = submission(CG + """
    // Stream compaction with warp-aggregated atomics: the threads that keep an element form a
    // coalesced group, its first thread reserves room for all of them with one atomicAdd.
    __device__ int reserve(int* counter) {
        cg::coalesced_group active = cg::coalesced_threads();
        int base;
        if (active.thread_rank() == 0) base = atomicAdd(counter, (int)active.size());
        return active.shfl(base, 0) + active.thread_rank();
    }
    extern "C" __global__ void keep_positive(const float* x, float* kept, int* counter, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n && x[i] > 0.0f) kept[reserve(counter)] = x[i];
    }
    extern "C" __global__ void copy_count(const int* counter, int* count) { count[0] = counter[0]; }
""", launch("keep_positive", ["ceil_div(n, 96)"], [96], ["x", "kept", "counter", "n"]),
    launch("copy_count", [1], [1], ["counter", "count"]),
    scratches=(scratch("counter", "int32", "1", init="zero"),))


@style("cg-coalesced-threads-atomic-aggregation", CG_AGGREGATE)
def _():
    cases = []
    for n in (1, 50, 3000):
        x = rng(n).standard_normal(n).astype(np.float32)
        positive = np.sort(x[x > 0])

        def check(r, positive=positive):
            count = int(r.outputs["count"][0])
            assert count == positive.size, (count, positive.size)
            equal(np.sort(r.outputs["kept"][:count]), positive, "kept elements")
        cases.append((f"n={n}", RunCase({"x": x}, {"kept": ((n,), "float32"), "count": ((1,), "int32")},
                                        {"n": n}), check))
    return cases


CG_THREAD_GROUP = submission(CG + """
    // The Programming Guide's style: a device function takes any thread_group and reduces
    // through shared memory with g.sync(); called with the block and with 16-thread tiles.
    __device__ float reduce_sum(cg::thread_group g, float* temp, float val) {
        int lane = g.thread_rank();
        for (int i = g.size() / 2; i > 0; i /= 2) {
            temp[lane] = val;
            g.sync();
            if (lane < i) val += temp[lane + i];
            g.sync();
        }
        return val;
    }
    extern "C" __global__ void sums(const float* x, float* block_total, float* tile_totals) {
        __shared__ float temp[128];
        cg::thread_block block = cg::this_thread_block();
        float v = x[blockIdx.x * 128 + block.thread_rank()];
        float total = reduce_sum(block, temp, v);
        if (block.thread_rank() == 0) block_total[blockIdx.x] = total;
        block.sync();
        cg::thread_group tile = cg::tiled_partition(block, 16);
        float* mine = temp + (block.thread_rank() / 16) * 16;
        float t = reduce_sum(tile, mine, v);
        if (tile.thread_rank() == 0) tile_totals[blockIdx.x * 8 + block.thread_rank() / 16] = t;
    }
""", launch("sums", ["blocks"], [128], ["x", "block_total", "tile_totals"]))


@style("cg-thread-group-shared-memory-reduce", CG_THREAD_GROUP)
def _():
    cases = []
    for blocks in (1, 3):
        x = rng(blocks).integers(-8, 8, blocks * 128).astype(np.float32)   # exact in any order

        def check(r, x=x, blocks=blocks):
            equal(r.outputs["block_total"], x.reshape(blocks, 128).sum(axis=1), "block")
            equal(r.outputs["tile_totals"], x.reshape(blocks * 8, 16).sum(axis=1), "tiles")
        cases.append((f"blocks={blocks}", RunCase(
            {"x": x}, {"block_total": ((blocks,), "float32"), "tile_totals": ((blocks * 8,), "float32")},
            {"blocks": blocks}), check))
    return cases


CG_VOTES = submission(CG + """
    // Votes and labels within a warp: ballot, any/all, match_any and labeled_partition (the
    // threads holding the same key count themselves).
    extern "C" __global__ void votes(const int* key, unsigned* ballot, int* any_all, int* same_key) {
        auto warp = cg::tiled_partition<32>(cg::this_thread_block());
        int k = key[threadIdx.x];
        unsigned b = warp.ballot(k > 0);
        int flags = warp.any(k > 2) + 2 * warp.all(k > -5);
        cg::coalesced_group same = cg::labeled_partition(warp, k);
        unsigned peers = warp.match_any(k);
        if (warp.thread_rank() == 0) { ballot[threadIdx.x / 32] = b; any_all[threadIdx.x / 32] = flags; }
        same_key[threadIdx.x] = same.size() * 100 + __popc(peers);
    }
""", launch("votes", [1], [64], ["key", "ballot", "any_all", "same_key"]))


@style("cg-tile-votes-labeled-partition", CG_VOTES)
def _():
    key = rng(3).integers(-3, 4, 64).astype(np.int32)
    warps = key.reshape(2, 32)
    ballot = np.array([sum(1 << i for i in range(32) if w[i] > 0) for w in warps], np.uint32)
    any_all = np.array([int((w > 2).any()) + 2 * int((w > -5).all()) for w in warps], np.int32)
    same = np.array([101 * int((warps[t // 32] == key[t]).sum()) for t in range(64)], np.int32)

    def check(r):
        equal(r.outputs["ballot"], ballot, "ballot")
        equal(r.outputs["any_all"], any_all, "any/all")
        equal(r.outputs["same_key"], same, "labeled_partition / match_any")
    return [("64", RunCase({"key": key}, {"ballot": ((2,), "uint32"), "any_all": ((2,), "int32"),
                                          "same_key": ((64,), "int32")}), check)]


CG_GRID_STRIDE = submission(CG + """
    // A grid-stride loop over this_grid()'s ranks (no grid.sync(): that is refused).
    extern "C" __global__ void axpy(const float* x, float* y, float a, int n) {
        cg::grid_group grid = cg::this_grid();
        for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size())
            y[i] = a * x[i] + 1.0f;
    }
""", launch("axpy", [3], [64], ["x", "y", "a", "n"]))


@style("cg-grid-group-grid-stride-loop", CG_GRID_STRIDE)
def _():
    cases = []
    for n in (5, 1000):
        x = rng(n).standard_normal(n).astype(np.float32)
        want = x.astype(np.float64) * 1.5 + 1.0

        def check(r, want=want):
            close(r.outputs["y"], want, "axpy", rtol=1e-6)
        cases.append((f"n={n}", RunCase({"x": x}, {"y": ((n,), "float32")}, {"n": n}, {"a": 1.5}), check))
    return cases


# ============================================================================ the device library

SHARED_MEMORY_T = submission("""
    // The CUDA samples' idiom: dynamic shared memory typed through a template helper, here in a
    // templated tree reduction that an extern "C" entry instantiates.
    template <class T> struct SharedMemory {
        __device__ inline operator T*() {
            extern __shared__ __align__(sizeof(T)) unsigned char smem[];
            return reinterpret_cast<T*>(smem);
        }
    };
    template <class T, unsigned int blockSize>
    __device__ void reduce_rows(const T* x, T* out, int cols) {
        T* sdata = SharedMemory<T>();
        unsigned tid = threadIdx.x;
        T sum = 0;
        for (int c = tid; c < cols; c += blockSize) sum += x[blockIdx.x * cols + c];
        sdata[tid] = sum;
        __syncthreads();
        for (unsigned s = blockSize / 2; s > 0; s >>= 1) {
            if (tid < s) sdata[tid] = sum = sum + sdata[tid + s];
            __syncthreads();
        }
        if (tid == 0) out[blockIdx.x] = sum;
    }
    extern "C" __global__ void row_sums_double(const double* x, double* out, int cols) {
        reduce_rows<double, 128>(x, out, cols);
    }
""", launch("row_sums_double", ["rows"], [128], ["x", "out", "cols"], shared_bytes="128 * 8"))


@style("shared-memory-template-reduction", SHARED_MEMORY_T)
def _():
    cases = []
    for rows, cols in ((1, 1), (3, 130), (5, 1000)):
        x = rng(cols).standard_normal((rows, cols))

        def check(r, x=x):
            close(r.outputs["out"], x.sum(axis=1), "row sums", rtol=1e-12, atol=1e-12)
        cases.append((f"{rows}x{cols}", RunCase({"x": x}, {"out": ((rows,), "float64")},
                                                {"rows": rows, "cols": cols}), check))
    return cases


MEMCPY_MEMSET = submission("""
    #include <cuda_runtime.h>
    #include <device_launch_parameters.h>
    #include <cstddef>
    #include <string.h>
    #include <float.h>
    // Device memcpy / memset: a record copied by bytes into a local struct, a local histogram
    // cleared with memset; limits from <float.h>; the runtime headers a .cu file starts with.
    struct Particle { float x, y, z, w; };
    extern "C" __global__ void particles(const float* raw, float* norm, int* hist, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        Particle p;
        memcpy(&p, raw + 4 * i, (std::size_t)sizeof p);
        int local[4];
        memset(local, 0, sizeof local);
        float v[4] = {p.x, p.y, p.z, p.w};
        float smallest = FLT_MAX;
        for (int k = 0; k < 4; k++) { local[v[k] > 0.0f] += 1; smallest = fminf(smallest, v[k]); }
        norm[i] = sqrtf(p.x * p.x + p.y * p.y + p.z * p.z) + (smallest < DBL_EPSILON ? 0.0f : 1.0f);
        hist[2 * i] = local[0];
        hist[2 * i + 1] = local[1];
    }
""", launch("particles", ["ceil_div(n, 64)"], [64], ["raw", "norm", "hist", "n"]))


@style("device-memcpy-memset-float-h", MEMCPY_MEMSET)
def _():
    cases = []
    for n in (1, 100):
        raw = rng(n).standard_normal((n, 4)).astype(np.float32)
        d = raw.astype(np.float64)
        want = np.sqrt((d[:, :3] ** 2).sum(axis=1)) + (d.min(axis=1) >= np.finfo(np.float64).eps)
        hist = np.stack([(raw <= 0).sum(axis=1), (raw > 0).sum(axis=1)], axis=1).reshape(-1).astype(np.int32)

        def check(r, want=want, hist=hist):
            close(r.outputs["norm"], want, "norm", rtol=1e-6)
            equal(r.outputs["hist"], hist, "histogram")
        cases.append((f"n={n}", RunCase({"raw": raw.reshape(-1)}, {"norm": ((n,), "float32"),
                                                                   "hist": ((2 * n,), "int32")}, {"n": n}),
                      check))
    return cases


INTERVAL = submission("""
    // Interval arithmetic with the directed-rounding intrinsics: [lo, hi] encloses the exact
    // a*b + c, a/3 and sqrt(|a|), one ulp wide (or a point when exact).
    extern "C" __global__ void enclose(const float* a, const float* b, const float* c, float* lo,
                                       float* hi, float* hi2, double* dlo, double* dhi, float* slo, float* shi, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        lo[i] = __fmaf_rd(a[i], b[i], c[i]);
        hi[i] = __fmaf_ru(a[i], b[i], c[i]);
        hi2[i] = __fadd_ru(__fmul_ru(a[i], b[i]), c[i]);
        dlo[i] = __ddiv_rd((double)a[i], 3.0);
        dhi[i] = __ddiv_ru((double)a[i], 3.0);
        slo[i] = __fsqrt_rd(fabsf(a[i]));
        shi[i] = __fsqrt_ru(fabsf(a[i]));
    }
""", launch("enclose", ["ceil_div(n, 32)"], [32], ["a", "b", "c", "lo", "hi", "hi2", "dlo", "dhi", "slo", "shi", "n"]))


def _ulps_apart(lo, hi) -> int:
    return abs(int(np.asarray(hi).view(np.int32 if lo.dtype == np.float32 else np.int64))
               - int(np.asarray(lo).view(np.int32 if lo.dtype == np.float32 else np.int64)))


@style("rounding-mode-intrinsics-interval", INTERVAL)
def _():
    n = 300
    g = rng(9)
    a, b, c = (g.standard_normal(n).astype(np.float32) * np.float32(10) ** g.integers(-3, 4, n).astype(np.float32)
               for _ in range(3))

    def check(r):
        out = r.outputs
        for k in range(n):
            fma = Fraction(float(a[k])) * Fraction(float(b[k])) + Fraction(float(c[k]))
            assert Fraction(float(out["lo"][k])) <= fma <= Fraction(float(out["hi"][k])), k
            assert _ulps_apart(out["lo"][k], out["hi"][k]) == (0 if Fraction(float(out["lo"][k])) == fma else 1), k
            assert fma <= Fraction(float(out["hi2"][k])), k   # two upward roundings stay above
            third = Fraction(float(a[k])) / 3
            assert Fraction(float(out["dlo"][k])) <= third <= Fraction(float(out["dhi"][k])), k
            exact = Fraction(float(out["dlo"][k])) == third
            assert _ulps_apart(out["dlo"][k], out["dhi"][k]) == (0 if exact else 1), k
            root_lo, root_hi = Fraction(float(out["slo"][k])), Fraction(float(out["shi"][k]))
            assert root_lo ** 2 <= abs(Fraction(float(a[k]))) <= root_hi ** 2, k
            assert _ulps_apart(out["slo"][k], out["shi"][k]) <= 1, k
    outs = {"lo": ((n,), "float32"), "hi": ((n,), "float32"), "hi2": ((n,), "float32"), "dlo": ((n,), "float64"),
            "dhi": ((n,), "float64"), "slo": ((n,), "float32"), "shi": ((n,), "float32")}
    return [("300", RunCase({"a": a, "b": b, "c": c}, outs, {"n": n}), check)]


DEBUG_PRINT_ASSERT = submission("""
    #include <stdio.h>
    #include <assert.h>
    // printf / assert debugging left in a kernel; a variable and a parameter named dim3 (legal
    // CUDA: the builtins keep their meaning).
    __device__ int row_of(int i, int dim3) { return i / (dim3 * blockDim.y); }
    extern "C" __global__ void scale(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int dim3 = blockDim.x;
        assert(dim3 == 32 && row_of(i, dim3) == (int)blockIdx.x);
        if (i == 0) printf("scale: n=%d first=%.2f\\n", n, x[0]);
        if (i < n) y[i] = 2.0f * x[i];
    }
""", launch("scale", ["ceil_div(n, 32)"], [32], ["x", "y", "n"]))


@style("printf-assert-stdio-dim3-variable", DEBUG_PRINT_ASSERT)
def _():
    x = np.arange(40, dtype=np.float32) + np.float32(0.25)

    def check(r):
        equal(r.outputs["y"], 2 * x, "y")
        assert r.stdout.strip() == "scale: n=40 first=0.25", r.stdout
    return [("40", RunCase({"x": x}, {"y": ((40,), "float32")}, {"n": 40}), check)]


# ============================================================================ the tests

IDS = [s.id for s in STYLES]


def _without_fibers(entry: Style, result: RunResult) -> bool:
    """The run stopped because the parser gave a cooperative-groups kernel no fibers (module doc)."""
    return ("cooperative_groups" in entry.source and not parse_submission(entry.source).uses_barriers
            and result.outcome == "sync_error" and "in a kernel run without fibers" in result.message)


@pytest.mark.parametrize("entry", STYLES, ids=IDS)
def test_matches_reference(entry: Style):
    """Every case matches its reference under every thread order."""
    kernel = compiled(entry.source)
    cases = entry.cases()
    for schedule in SCHEDULES:
        results = kernel.run_batch([c for _, c, _ in cases], schedule=schedule, timeout_s=30)
        for (label, _, check), result in zip(cases, results):
            if _without_fibers(entry, result):
                pytest.xfail("the submission parser gives no fibers to cooperative-groups code "
                             "without a barrier intrinsic (Submission.uses_barriers)")
            assert result.outcome == "ok", f"{entry.id} [{label}, {schedule}]: {result.message}"
            check(result)


@pytest.mark.parametrize("entry", STYLES, ids=IDS)
def test_nvrtc_accepts(entry: Style):
    """NVRTC compiles the same text (CUDA's own cooperative_groups.h) to PTX with every kernel."""
    ptx = nvrtc_compile(entry.source).ptx
    for kernel in {launch_.kernel for launch_ in parse_submission(entry.source).launches}:
        assert f".entry {kernel}(" in ptx, kernel


def test_failed_assert_stops_the_kernel():
    """A false device assert stops the run (a trap, as on a GPU) with CUDA's message naming the line,
    the block and the thread: never an `ok` result."""
    source = submission("""
        extern "C" __global__ void k(const float* x, float* y) {
            assert(x[threadIdx.x] >= 0.0f);
            y[threadIdx.x] = x[threadIdx.x];
        }
    """, launch("k", [1], [8], ["x", "y"]))
    x = np.ones(8, np.float32)
    kernel = compiled(source)
    assert kernel.run({"x": x}, {"y": ((8,), "float32")}, {}).ok
    x[5] = -1.0
    bad = kernel.run({"x": x}, {"y": ((8,), "float32")}, {})
    assert bad.outcome == "crash", (bad.outcome, bad.message)
    assert bad.message == ("a device assert failed: submission.cu:9: k: block: [0,0,0], thread: [5,0,0] "
                           "Assertion `x[threadIdx.x] >= 0.0f` failed."), bad.message


def test_grid_sync_is_refused_when_compiled():
    """grid_group::sync() cannot run on the emulator (blocks run one at a time): g++ refuses it
    with the reason, while NVRTC accepts it."""
    from mutagym.runtime import CompileError
    source = submission(CG + """
        extern "C" __global__ void k(float* y) { cg::this_grid().sync(); y[0] = 1.0f; }
    """, launch("k", [2], [32], ["y"]))
    nvrtc_compile(source)
    with pytest.raises(CompileError, match=r"grid-wide synchronisation\) is not supported"):
        compiled(source)


def test_suite_covers_each_style():
    """One entry or more per style the issue names, each with its own id."""
    assert len(STYLES) >= 11 and len(set(IDS)) == len(IDS)


def _run_or_xfail(source: str, case: RunCase, schedule: str) -> RunResult:
    """One run of a cooperative-groups kernel; an expected failure while the parser gives it no
    fibers (without them coalesced_threads() is the calling lane alone: no error, wrong sizes)."""
    if not parse_submission(source).uses_barriers:
        pytest.xfail("the submission parser gives no fibers to cooperative-groups code without a "
                     "barrier intrinsic (Submission.uses_barriers)")
    return compiled(source).run(case.inputs, case.outputs, case.dims, case.scalars, schedule=schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_missing_group_sync_is_a_data_race(schedule):
    """block.sync() is a barrier to the race detector: without it, the first warp reads the other
    warps' partial sums unordered, a data_race in every thread order."""
    racy = CG_BLOCK_SUM.replace("        block.sync();\n", "")
    assert racy != CG_BLOCK_SUM
    x = np.ones(4096, np.float32)
    result = _run_or_xfail(racy, RunCase({"x": x}, {"partial": ((8,), "float32")}, {"n": 4096}), schedule)
    assert result.outcome == "data_race", (result.outcome, result.message)


COALESCED_DIVERGENT = submission(CG + """
    // coalesced_threads() in a branch: the group is the warp's lanes that took it.
    extern "C" __global__ void branch_groups(const int* take, int* size, int* rank) {
        int t = threadIdx.x;
        size[t] = -1;
        rank[t] = -1;
        if (take[t]) {
            cg::coalesced_group g = cg::coalesced_threads();
            size[t] = g.size();
            rank[t] = g.thread_rank();
        }
    }
""", launch("branch_groups", [1], [64], ["take", "size", "rank"]))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_coalesced_threads_in_a_branch_are_the_lanes_that_took_it(schedule):
    """The group's size is the number of lanes of the warp in the branch, ranks count them."""
    take = (np.arange(64) % 3 == 0).astype(np.int32)
    take[40:] = 0
    case = RunCase({"take": take}, {"size": ((64,), "int32"), "rank": ((64,), "int32")})
    result = _run_or_xfail(COALESCED_DIVERGENT, case, schedule)
    assert result.ok, result.message
    size, rank = np.full(64, -1, np.int32), np.full(64, -1, np.int32)
    for warp in (0, 1):
        lanes = [t for t in range(32 * warp, 32 * warp + 32) if take[t]]
        for r, t in enumerate(lanes):
            size[t], rank[t] = len(lanes), r
    equal(result.outputs["size"], size, "sizes")
    equal(result.outputs["rank"], rank, "ranks")
    nvrtc_compile(COALESCED_DIVERGENT)


RACY_MEMCPY = submission("""
    // Every thread copies its own element to the same place, with a size known only at run time
    // (a call of the C library's memcpy, which g++'s instrumentation does not see by itself).
    extern "C" __global__ void gather(const float* x, float* out, int n) {
        memcpy(out, x + threadIdx.x, n * sizeof(float));
    }
""", launch("gather", [1], [32], ["x", "out", "n"]))


def test_device_memcpy_of_runtime_size_is_seen_by_the_race_detector():
    """Threads memcpy different values into one element with nothing ordering them: a data_race,
    as two plain stores would be."""
    x = np.arange(32, dtype=np.float32)
    result = compiled(RACY_MEMCPY).run({"x": x}, {"out": ((1,), "float32")}, {"n": 1})
    assert result.outcome == "data_race", (result.outcome, result.message)
    ordered = compiled(RACY_MEMCPY.replace("x + threadIdx.x", "x")).run({"x": x}, {"out": ((1,), "float32")}, {"n": 1})
    assert ordered.ok, ordered.message   # the same value from every thread is no race
