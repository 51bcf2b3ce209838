"""Kernels in the styles public CUDA code is written in, launched as written (issue 16).

Each entry of `PUBLIC` is a kernel written here in a public style (a templated tiled SGEMM, llm.c's
typedef'd and packed kernels, an in-place row softmax, a ticketed two-launch reduction), with only
the launch block added, and the cases it runs on. `test_emulator_matches_fp64` runs every case
under three thread orders against a float64 numpy reference; `test_nvrtc_compiles` compiles the
same text with the real NVRTC and checks that every launched kernel's symbol is in the PTX. The
classes after it pin the launch block's new forms and their errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from mutagym.runtime import CompileError, RunCase, SubmissionError
from mutagym.runtime.buffers import DeviceMemory
from mutagym.runtime.cuda_backend import CANARY_BYTES, _build_job, _host_image
from mutagym.runtime.errors import LaunchError
from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.runtime.nvrtc_gate import nvrtc_gate
from mutagym.runtime.plan import resolve_plan
from mutagym.runtime.submission import parse_submission
from submission_text import compiled

SCHEDULES = ("ascending", "descending", "shuffled:7")
RNG = np.random.default_rng(16)


def text(block: dict, code: str) -> str:
    """A submission: the launch block from *block* (top-level keys, then `launch` and `scratch`
    tables), then *code*."""
    lines = ["/* mutagym"]
    lines += [f"{key} = {_toml(value)}" for key, value in block.items() if key not in ("launch", "scratch")]
    for kind in ("launch", "scratch"):
        for table in block.get(kind, ()):
            lines.append(f"[[{kind}]]")
            lines += [f"{key} = {_toml(value)}" for key, value in table.items()]
    return "\n".join(lines + ["*/", code.strip(), ""])


def _toml(value) -> str:
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)   # inf, -inf, nan: TOML's spelling
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


@dataclass(frozen=True)
class Public:
    """A kernel in a public style, its cases, and the fp64 reference of its outputs."""

    id: str
    source: str
    cases: Callable[[], list[RunCase]]
    reference: Callable[[RunCase], dict[str, np.ndarray]]
    rtol: float = 1e-5
    atol: float = 1e-6


# ---------------------------------------------------------------------- a templated tiled SGEMM

SGEMM = text({
    "inout": {"out": "c"},
    "launch": [{"kernel": "sgemm<32, 32, 8>", "grid": ["ceil_div(N, 32)", "ceil_div(M, 32)"],
                "block": [32, 32], "args": ["M", "N", "K", "alpha", "a", "b", "beta", "c"]}],
}, """
// C = alpha * A @ B + beta * C, one output element per thread, BM x BK and BK x BN tiles in
// shared memory (the first tiled kernel of the SGEMM tutorials).
template <const int BM, const int BN, const int BK>
__global__ void __launch_bounds__(BM * BN) sgemm(int M, int N, int K, float alpha, const float *A,
                                                 const float *B, float beta, float *C) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * BM + threadIdx.y, col = blockIdx.x * BN + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (t < BM * BK) {
            const int r = blockIdx.y * BM + t / BK, c = k0 + t % BK;
            As[t] = (r < M && c < K) ? A[r * K + c] : 0.0f;
        }
        if (t < BK * BN) {
            const int r = k0 + t / BN, c = blockIdx.x * BN + t % BN;
            Bs[t] = (r < K && c < N) ? B[r * N + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) acc += As[threadIdx.y * BK + k] * Bs[k * BN + threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
""")


def sgemm_cases() -> list[RunCase]:
    cases = []
    for m, n, k in ((40, 36, 20), (1, 5, 3)):
        a, b, c = (RNG.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
        cases.append(RunCase({"a": a, "b": b, "c": c}, {"out": ((m, n), "float32")},
                             {"M": m, "N": n, "K": k}, {"alpha": 1.5, "beta": -0.5}))
    return cases


def sgemm_reference(case: RunCase) -> dict[str, np.ndarray]:
    a, b, c = (case.inputs[k].astype(np.float64) for k in "abc")
    return {"out": case.scalars["alpha"] * a @ b + case.scalars["beta"] * c}


# ---------------------------------------------------------------------- llm.c: typedef'd, packed

GELU = text({
    "launch": [{"kernel": "gelu_forward_kernel2", "grid": ["ceil_div(ceil_div(N, 4), 128)"],
                "block": [128], "args": ["out", "inp", "N"]}],
}, """
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#else
typedef float floatX;
#endif
typedef unsigned int uint;
#define GELU_SCALING_FACTOR 0.7978845608028654f

// llm.c's GELU forward: four elements a thread through one packed 16-byte load and store.
__global__ void gelu_forward_kernel2(floatX* out, const floatX* inp, uint N) {
    uint idx = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (idx + 3 < N) {
        float4 packed = *reinterpret_cast<const float4*>(inp + idx);
        float v[4] = {packed.x, packed.y, packed.z, packed.w};
        for (int k = 0; k < 4; ++k) {
            float cube = 0.044715f * v[k] * v[k] * v[k];
            v[k] = 0.5f * v[k] * (1.0f + tanhf(GELU_SCALING_FACTOR * (v[k] + cube)));
        }
        *reinterpret_cast<float4*>(out + idx) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        for (uint i = idx; i < N; ++i) {
            float x = inp[i], cube = 0.044715f * x * x * x;
            out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
        }
    }
}
""")


def unary_cases(sizes=(1, 7, 1000, 4099)) -> list[RunCase]:
    return [RunCase({"inp": RNG.standard_normal(n).astype(np.float32)}, {"out": ((n,), "float32")},
                    {"N": n}) for n in sizes]


def gelu_reference(case: RunCase) -> dict[str, np.ndarray]:
    x = case.inputs["inp"].astype(np.float64)
    return {"out": 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}


RESIDUAL = text({
    "launch": [
        {"kernel": "residual_packed", "grid": ["max(1, ceil_div(n // 4, 256))"], "block": [256],
         "args": ["out", "inp1", "inp2", "n // 4"]},
        {"kernel": "residual_forward_kernel", "grid": [1], "block": [4],
         "args": ["out + n // 4 * 4", "inp1 + n // 4 * 4", "inp2 + n // 4 * 4", "n % 4"]},
    ],
}, """
#define floatX float
using x128 = float4;

// The packed body over whole groups of four, then the scalar kernel on the tail, reached
// through pointer offsets as llm.c's host code passes them.
__global__ void residual_packed(x128* out, const x128* inp1, const x128* inp2, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        x128 a = inp1[i], b = inp2[i];
        out[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}

__global__ void residual_forward_kernel(floatX* out, const floatX* inp1, const floatX* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) out[idx] = (floatX)((float)inp1[idx] + (float)inp2[idx]);
}
""")


def residual_cases() -> list[RunCase]:
    return [RunCase({"inp1": RNG.standard_normal(n).astype(np.float32),
                     "inp2": RNG.standard_normal(n).astype(np.float32)},
                    {"out": ((n,), "float32")}, {"n": n}) for n in (3, 8, 1001)]


def residual_reference(case: RunCase) -> dict[str, np.ndarray]:
    return {"out": case.inputs["inp1"].astype(np.float64) + case.inputs["inp2"]}


# ---------------------------------------------------------------------- an in-place row softmax

SOFTMAX = text({
    "inout": ["x"],
    "launch": [{"kernel": "softmax_inplace", "grid": ["rows"], "block": [128],
                "args": ["x", "cols"]}],
}, """
// One block a row, updating the row where it lies: max, sum of exponentials, then the quotient.
__global__ void softmax_inplace(float* x, int cols) {
    __shared__ float red[128];
    float* row = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    sum = red[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = expf(row[c] - m) / sum;
}
""")


def softmax_cases() -> list[RunCase]:
    return [RunCase({"x": (3 * RNG.standard_normal((r, c))).astype(np.float32)},
                    {"out": ((r, c), "float32")}, {"rows": r, "cols": c})
            for r, c in ((1, 1), (3, 129), (5, 300))]


def softmax_reference(case: RunCase) -> dict[str, np.ndarray]:
    x = case.inputs["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": e / e.sum(axis=1, keepdims=True)}


BIAS_RELU = text({
    "inout": ["x"],
    "launch": [
        {"kernel": "bias_relu_inplace", "grid": ["ceil_div(n, 128)"], "block": [128],
         "args": ["x", "NULL", "n // 2"]},
        {"kernel": "bias_relu_inplace", "grid": ["ceil_div(n, 128)"], "block": [128],
         "args": ["x + n // 2", "bias", "n - n // 2"], "fill": {"bias": 0.5}},
    ],
    "scratch": [{"name": "bias", "dtype": "float32", "size": "n"}],
}, """
// A bias that may be absent (NULL), applied in place to half of the buffer at a time.
__global__ void bias_relu_inplace(float* x, const float* __restrict__ bias, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + (bias != nullptr ? bias[i] : 0.0f);
        x[i] = v > 0.0f ? v : 0.0f;
    }
}
""")


def bias_relu_cases() -> list[RunCase]:
    return [RunCase({"x": RNG.standard_normal(n).astype(np.float32)}, {"out": ((n,), "float32")},
                    {"n": n}) for n in (1, 2, 1001)]


def bias_relu_reference(case: RunCase) -> dict[str, np.ndarray]:
    x = case.inputs["x"].astype(np.float64)
    h = len(x) // 2
    return {"out": np.maximum(np.concatenate([x[:h], x[h:] + 0.5]), 0)}


# ---------------------------------------------------------------------- a ticketed reduction

ROW_SUMS = text({
    "launch": [
        {"kernel": "sum_last_block", "grid": [4], "block": [256],
         "args": ["x", "partial", "ticket", "out", "n"], "fill": {"ticket": 0}},
        {"kernel": "sum_last_block", "grid": [4], "block": [256],
         "args": ["x + n", "partial", "ticket + 1", "out + 1", "n"]},
    ],
    "scratch": [{"name": "partial", "dtype": "float32", "size": "4"},
                {"name": "ticket", "dtype": "uint64", "size": "2"}],
}, """
// The CUDA samples' threadFenceReduction: every block sums a stride of the row and publishes its
// partial; the block that takes the last ticket adds the partials. The ticket must start at zero
// (a fill), and each launch gets its own row, ticket and output through pointer offsets.
__global__ void sum_last_block(const float* x, float* partial, unsigned long long* ticket, float* out,
                               int n) {
    __shared__ float s[256];
    __shared__ bool last;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        unsigned long long taken = atomicAdd(ticket, 1ull);
        last = taken == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        float total = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) total += ((volatile float*)partial)[b];
        out[0] = total;
    }
}
""")


def row_sums_cases() -> list[RunCase]:
    return [RunCase({"x": RNG.standard_normal((2, n)).astype(np.float32)}, {"out": ((2,), "float32")},
                    {"n": n}) for n in (1, 300, 5000)]


def row_sums_reference(case: RunCase) -> dict[str, np.ndarray]:
    return {"out": case.inputs["x"].astype(np.float64).sum(axis=1)}


# ---------------------------------------------------------------------- flash-attention-minimal style

ATTENTION = text({
    "launch": [{"kernel": "attention_forward", "grid": ["B", "nh"], "block": [32],
                "shared_bytes": "(3 * 32 * d + 32 * 32) * 4",
                "args": ["q", "k", "v", "N", "d", "ceil_div(N, 32)", "ceil_div(N, 32)", "32", "32",
                         "1.0 / sqrt(d)", "l", "m", "out"],
                "fill": {"out": 0, "l": 0, "m": float("-inf")}}],
    "scratch": [{"name": "l", "dtype": "float32", "size": "B * nh * N"},
                {"name": "m", "dtype": "float32", "size": "B * nh * N"}],
}, """
// Tiled attention with an online softmax, one block per (batch, head) and one query row per
// thread, in the style of flash-attention-minimal: the host zeroes O and l, sets m to -inf, and
// passes the tile counts and the softmax scale.
__global__ void attention_forward(const float* Q, const float* K, const float* V, const int N,
                                  const int d, const int Tc, const int Tr, const int Bc, const int Br,
                                  const float softmax_scale, float* l, float* m, float* O) {
    const int tx = threadIdx.x;
    const int qkv = (blockIdx.x * gridDim.y + blockIdx.y) * N * d;
    const int lm = (blockIdx.x * gridDim.y + blockIdx.y) * N;
    extern __shared__ float sram[];
    float* Qi = sram;
    float* Kj = sram + Bc * d;
    float* Vj = sram + 2 * Bc * d;
    float* S = sram + 3 * Bc * d;
    for (int j = 0; j < Tc; ++j) {
        const int key = j * Bc + tx;
        for (int x = 0; x < d; ++x) {
            Kj[tx * d + x] = key < N ? K[qkv + key * d + x] : 0.0f;
            Vj[tx * d + x] = key < N ? V[qkv + key * d + x] : 0.0f;
        }
        __syncthreads();
        const int keys = min(Bc, N - j * Bc);
        for (int i = 0; i < Tr; ++i) {
            const int row = i * Br + tx;
            if (tx >= Br || row >= N) continue;
            for (int x = 0; x < d; ++x) Qi[tx * d + x] = Q[qkv + row * d + x];
            float row_max = -INFINITY;
            for (int y = 0; y < keys; ++y) {
                float dot = 0.0f;
                for (int x = 0; x < d; ++x) dot += Qi[tx * d + x] * Kj[y * d + x];
                S[Bc * tx + y] = dot * softmax_scale;
                row_max = fmaxf(row_max, S[Bc * tx + y]);
            }
            float row_sum = 0.0f;
            for (int y = 0; y < keys; ++y) {
                S[Bc * tx + y] = __expf(S[Bc * tx + y] - row_max);
                row_sum += S[Bc * tx + y];
            }
            const float m_prev = m[lm + row], l_prev = l[lm + row];
            const float m_new = fmaxf(m_prev, row_max);
            const float l_new = __expf(m_prev - m_new) * l_prev + __expf(row_max - m_new) * row_sum;
            for (int x = 0; x < d; ++x) {
                float pv = 0.0f;
                for (int y = 0; y < keys; ++y) pv += S[Bc * tx + y] * Vj[y * d + x];
                O[qkv + row * d + x] = (l_prev * __expf(m_prev - m_new) * O[qkv + row * d + x]
                                        + __expf(row_max - m_new) * pv) / l_new;
            }
            m[lm + row] = m_new;
            l[lm + row] = l_new;
        }
        __syncthreads();
    }
}
""")


def attention_cases() -> list[RunCase]:
    cases = []
    for b, nh, n, d in ((1, 2, 40, 16), (2, 1, 5, 8)):
        q, k, v = (RNG.standard_normal((b, nh, n, d)).astype(np.float32) for _ in range(3))
        cases.append(RunCase({"q": q, "k": k, "v": v}, {"out": ((b, nh, n, d), "float32")},
                             {"B": b, "nh": nh, "N": n, "d": d}))
    return cases


def attention_reference(case: RunCase) -> dict[str, np.ndarray]:
    q, k, v = (case.inputs[name].astype(np.float64) for name in "qkv")
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return {"out": (p / p.sum(axis=-1, keepdims=True)) @ v}


PUBLIC = (
    Public("sgemm-template", SGEMM, sgemm_cases, sgemm_reference, rtol=1e-5, atol=1e-5),
    Public("llmc-gelu-typedef-uint-float4", GELU, unary_cases, gelu_reference, rtol=1e-5, atol=1e-6),
    Public("llmc-residual-define-using-offsets", RESIDUAL, residual_cases, residual_reference,
           rtol=2 ** -24, atol=0),   # one correctly rounded float32 add
    Public("softmax-inout", SOFTMAX, softmax_cases, softmax_reference, rtol=1e-5, atol=1e-7),
    Public("bias-relu-inout-null-fill", BIAS_RELU, bias_relu_cases, bias_relu_reference,
           rtol=2 ** -24, atol=0),
    Public("ticket-reduction-fill-u64-offsets", ROW_SUMS, row_sums_cases, row_sums_reference,
           rtol=1e-5, atol=1e-5),
    Public("flash-attention-fill-real-scale", ATTENTION, attention_cases, attention_reference,
           rtol=1e-4, atol=1e-5),
)


class TestPublicKernels:
    @pytest.mark.parametrize("entry", PUBLIC, ids=lambda e: e.id)
    def test_emulator_matches_fp64(self, entry: Public):
        kernel = compiled(entry.source)
        cases = entry.cases()
        runs = kernel.run_schedules(cases, SCHEDULES)
        for schedule, results in runs.items():
            for i, (case, result) in enumerate(zip(cases, results)):
                where = f"{entry.id}, case {i}, {schedule}"
                assert result.outcome == "ok", f"{where}: {result.outcome}: {result.message}"
                for name, want in entry.reference(case).items():
                    got = result.outputs[name].astype(np.float64)
                    bad = np.abs(got - want) > entry.atol + entry.rtol * np.abs(want)
                    assert not bad.any(), (f"{where}: {name}: {int(bad.sum())} of {bad.size} "
                                           f"out of tolerance, first got {got[bad][0]!r} want {want[bad][0]!r}")

    @pytest.mark.parametrize("entry", PUBLIC, ids=lambda e: e.id)
    def test_nvrtc_compiles(self, entry: Public):
        sub = parse_submission(entry.source)
        result = nvrtc_compile(entry.source, names=sub.symbols)
        assert sub.symbols == tuple(dict.fromkeys(l.kernel for l in sub.launches))
        for kernel in sub.symbols:
            assert f".entry {result.lowered[kernel]}(" in result.ptx, (kernel, result.lowered)

    def test_nvrtc_instantiates_what_the_launch_names(self):
        """A template's body is checked for the launched arguments only when it is instantiated:
        the gate must compile with the submission's symbols."""
        source = SGEMM.replace("__shared__ float As[BM * BK];",
                               "__shared__ float As[BM * BK];\n    static_assert(BK != 8, \"no 8\");")
        nvrtc_compile(source)   # the template alone compiles
        with pytest.raises(CompileError, match=r"no 8"):
            nvrtc_gate(source)

    def test_short_unsigned_names_need_no_typedef(self):
        """`uint`, `ushort` and `ulong` are declared for device code as nvcc's host headers do."""
        source = text({"launch": [{"kernel": "k", "grid": ["ceil_div(n, 32)"], "block": [32],
                                   "args": ["x", "out", "n"]}]},
                      "__global__ void k(const float* x, float* out, uint n) {\n"
                      "    uint i = blockIdx.x * blockDim.x + threadIdx.x; ushort s = 2; ulong w = 3;\n"
                      "    if (i < n) out[i] = x[i] * s + w;\n}\n")
        nvrtc_gate(source)
        x = np.arange(40, dtype=np.float32)
        [result] = compiled(source).run_batch([RunCase({"x": x}, {"out": ((40,), "float32")}, {"n": 40})])
        assert result.ok, (result.outcome, result.message)
        np.testing.assert_array_equal(result.outputs["out"], x * 2 + 3)

    def test_template_symbol_is_mangled(self):
        lowered = nvrtc_compile(SGEMM, names=("sgemm<32, 32, 8>",)).lowered["sgemm<32, 32, 8>"]
        assert lowered.startswith("_Z5sgemmILi32ELi32ELi8EE"), lowered

    def test_signatures_come_from_the_compiler(self):
        """typedef, #define, `using` and template parameters resolve to the element types."""
        assert str(parse_submission(SGEMM).kernels["sgemm<32, 32, 8>"]) == (
            "sgemm<32, 32, 8>(int M, int N, int K, float alpha, const float* A, const float* B, "
            "float beta, float* C)")
        assert str(parse_submission(GELU).kernels["gelu_forward_kernel2"]) == (
            "gelu_forward_kernel2(float* out, const float* inp, unsigned int N)")
        packed = parse_submission(RESIDUAL).kernels["residual_packed"].params[1]
        assert (packed.ctype, packed.dtype, packed.vector_width, packed.const) == ("float4", "float32", 4, True)


# ---------------------------------------------------------------------- the launch block's forms

def block_of(code: str, **tables) -> str:
    return text(tables, code)


RELU = """
__global__ void relu(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], 0.0f);
}
"""


def relu_launch(**extra) -> dict:
    return {"kernel": "relu", "grid": ["ceil_div(n, 128)"], "block": [128],
            "args": ["x", "out", "n"], **extra}


def refused(source: str, match: str, error: type = SubmissionError) -> SubmissionError:
    with pytest.raises(error, match=match) as info:
        parse_submission(source)
    return info.value


def plan(source: str, n: int = 10, **extra_inputs):
    inputs = {"x": np.zeros(n, np.float32), **extra_inputs}
    return resolve_plan(parse_submission(source), inputs, {"out": ((n,), "float32")}, {"n": n}, {})


class TestTemplates:
    TEMPLATE = """
template <int BLOCK, typename T>
__global__ void scale(const T* x, T* out, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = x[i] * (T)2;
}
"""

    def launch(self, kernel: str) -> str:
        return block_of(self.TEMPLATE, launch=[{"kernel": kernel, "grid": [1], "block": [256],
                                                "args": ["x", "out", "n"]}])

    def test_instantiation_is_normalized_and_typed(self):
        sub = parse_submission(self.launch("scale< 256,double >"))
        assert sub.launches[0].kernel == "scale<256, double>"
        assert [p.dtype for p in sub.kernels["scale<256, double>"].params] == ["float64", "float64", "int32"]

    def test_template_without_arguments(self):
        refused(self.launch("scale"), r"^line 3, launch 0: kernel 'scale' \(line 9\) is a template; "
                                      r'name an instantiation, such as kernel = "scale<...>"$')

    def test_arguments_for_a_plain_kernel(self):
        refused(block_of(RELU, launch=[relu_launch(kernel="relu<4>")]),
                r"kernel 'relu' \(line \d+\) is not a template; write kernel = \"relu\"$")

    @pytest.mark.parametrize("kernel, shown", [
        ("scale<256, float; int>", "';'"), ("scale<(256), float>", "'\\('"),
        ('scale<256, "a">', "'\"'"), ("scale<256, __mg_ctx_t>", "'__mg_ctx_t'")])
    def test_arguments_that_could_inject_code(self, kernel, shown):
        refused(self.launch(kernel), rf"template argument list <.*> holds {shown} \(not allowed here\)")

    @pytest.mark.parametrize("kernel", ["scale<256,, float>", "scale<256, float<>", "scale<256, >", "scale<256> <float>"])
    def test_malformed_arguments(self, kernel):
        refused(self.launch(kernel), r"template argument list <.*> has unbalanced '<>' or an empty argument$")

    def test_a_macro_in_the_arguments(self):
        source = self.launch("scale<WIDTH, float>").replace("template <int", "#define WIDTH 256\ntemplate <int")
        refused(source, r"holds 'WIDTH' \(a macro of the source: write its value\)")

    def test_default_arguments(self):
        source = self.launch("scale<>").replace("template <int BLOCK, typename T>",
                                                "template <int BLOCK = 256, typename T = float>")
        assert str(parse_submission(source).kernels["scale<>"]) == "scale<>(const float* x, float* out, int n)"
        assert nvrtc_compile(source, names=("scale<>",)).lowered["scale<>"].startswith("_Z5scaleILi256EfEv")

    def test_instantiation_the_compiler_refuses(self):
        err = refused(self.launch("scale<256>"), r"^line 2, launch 0: the compiler cannot name kernel "
                                                 r"'scale<256>': ")
        assert "mutagym-probe" not in str(err) and "/" not in err.reason.split(": ", 1)[0]

    def test_unbindable_template_type(self):
        source = self.launch("scale<256, Pair>").replace("template <int", "struct Pair { int a; };\ntemplate <int")
        refused(source, r"parameter 0 \('const T\* x'\) has type 'T\*', which the compiler resolves to "
                        r"'const Pair\*'; mutagym cannot bind it; use float, double")


class TestAliasedTypes:
    @pytest.mark.parametrize("prelude, declared, ctype", [
        ("typedef float floatX;", "floatX", "float"),
        ("#define floatX float", "floatX", "float"),
        ("using T = double;", "T", "double"),
        ("typedef unsigned int uint;", "uint", "unsigned int"),
        ("typedef __nv_bfloat16 floatX;", "floatX", "__nv_bfloat16"),
        ("#if 0\ntypedef double real;\n#else\ntypedef float real;\n#endif", "real", "float"),
        ("typedef float4 packed;", "const packed", "float4"),
        ("#define float double", "float", "double"),   # a name the source redefines
    ])
    def test_resolved_by_the_compiler(self, prelude, declared, ctype):
        code = f"{prelude}\n__global__ void k({declared}* p) {{}}\n"
        sub = parse_submission(block_of(code, launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["p"]}]))
        assert sub.kernels["k"].params[0].ctype == ctype

    def test_alias_of_a_struct(self):
        code = "struct Pair { float a, b; };\ntypedef Pair pair_t;\n__global__ void k(pair_t* p) {}\n"
        refused(block_of(code, launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["p"]}]),
                r"^line 10, kernel 'k': parameter 0 \('pair_t\* p'\) has type 'pair_t\*', which the "
                r"compiler resolves to 'Pair\*'; mutagym cannot bind it")

    def test_undeclared_type(self):
        code = "__global__ void k(const floatX* p) {}\n"
        refused(block_of(code, launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["p"]}]),
                r"^line 8: the compiler cannot name kernel 'k': 'floatX' does not name a type")

    def test_glibc_short_names(self):
        """`uint`, `ushort` and `ulong` mean what CUDA's host headers make them."""
        code = "__global__ void k(uint a, ushort b, ulong c) {}\n"
        sub = parse_submission(block_of(code, launch=[{"kernel": "k", "grid": [1], "block": [1],
                                                       "args": ["a", "b", "c"]}]))
        assert [p.dtype for p in sub.kernels["k"].params] == ["uint32", "uint16", "uint64"]

    def test_unlaunched_kernels_are_not_bound(self):
        """A helper kernel nobody launches may take what it likes."""
        code = RELU + "struct S { int a; };\n__global__ void helper(S* s, float** p) {}\n"
        assert "helper" not in parse_submission(block_of(code, launch=[relu_launch()])).kernels


class TestArguments:
    KERNEL = "__global__ void k(const float* x, float* out, int n) {}\n"

    def source(self, *args, **extra) -> str:
        return block_of(self.KERNEL, launch=[{"kernel": "k", "grid": [1], "block": [1],
                                              "args": list(args), **extra}])

    def test_offsets_null_and_values(self):
        p = plan(self.source("x + n // 2", "NULL", "n * 3 - 1"))
        x, out, n = p.launches[0].args
        assert (x.buffer, x.base, x.byte_offset) == ("x+20", "x", 20)
        assert (out.kind, out.value) == ("value", bytes(8))
        assert int.from_bytes(n.value, "little") == 29

    def test_offset_at_the_end_is_allowed_past_it_is_not(self):
        assert plan(self.source("x + n", "out", "n")).launches[0].args[0].byte_offset == 40
        with pytest.raises(LaunchError, match=r"args\[0\]: arg 'x \+ n \+ 1' of launch 0: offset 'n \+ 1' "
                                              r"= 11 elements is outside buffer 'x' \(0 to 10 elements\)$"):
            plan(self.source("x + n + 1", "out", "n"))

    def test_null_for_a_value(self):
        with pytest.raises(LaunchError, match=r"arg 'NULL' of launch 0 is a null pointer but parameter "
                                              r"'n' of kernel 'k' is a value int$"):
            plan(self.source("x", "out", "NULL"))

    def test_buffer_in_a_value_expression(self):
        with pytest.raises(LaunchError, match=r"arg 'out \* 2' of launch 0 uses buffer 'out' in an "
                                              r"expression; a pointer argument is 'buffer' or 'buffer \+ elements'$"):
            plan(self.source("x", "out", "out * 2"))

    def test_real_expressions_for_float_parameters(self):
        """Host code's `softmax_scale = 1.0 / sqrt(d)`, over dims and every scalar."""
        source = block_of("__global__ void k(float scale, double eps2, int n) {}\n",
                          launch=[{"kernel": "k", "grid": [1], "block": [1],
                                   "args": ["1.0 / sqrt(d)", "eps * 2", "n / 2"]}])
        sub = parse_submission(source)
        with pytest.raises(LaunchError, match=r"arg 'n / 2' of launch 0 is a real expression but parameter "
                                              r"'n' of kernel 'k' is int; an integer parameter takes an "
                                              r"integer expression \('//' divides\)$"):
            resolve_plan(sub, {}, {}, {"d": 64, "n": 4}, {"eps": 1e-5})
        ok = parse_submission(source.replace('"n / 2"', '"n // 2"'))
        scale, eps2, n = resolve_plan(ok, {}, {}, {"d": 64, "n": 4}, {"eps": 1e-5}).launches[0].args
        assert np.frombuffer(scale.value, np.float32)[0] == 0.125
        assert np.frombuffer(eps2.value, np.float64)[0] == 2e-5
        assert int.from_bytes(n.value, "little") == 2

    def test_half_precision_values(self):
        source = block_of("__global__ void k(__half a, __nv_bfloat16 b, half2 c) {}\n",
                          launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["alpha", "1 / 3", "alpha"]}])
        sub = parse_submission(source)
        with pytest.raises(LaunchError, match=r"parameter 'c' of kernel 'k' is a value of type half2, which "
                                              r"mutagym cannot pass; take its components as scalars"):
            resolve_plan(sub, {}, {}, {}, {"alpha": 0.5})
        ok = parse_submission(source.replace("half2 c", "int c").replace('"alpha"]', '"2"]'))
        a, b, c = resolve_plan(ok, {}, {}, {}, {"alpha": 0.5}).launches[0].args
        assert a.value == np.float16(0.5).tobytes()
        assert b.value == np.array(1 / 3, dtype=ml_dtypes.bfloat16).tobytes()
        with pytest.raises(LaunchError, match=r"parameter 'a' of kernel 'k' is __half: 100000.0 is out of range for float16$"):
            resolve_plan(ok, {}, {}, {}, {"alpha": 1e5})

    def test_value_expression_for_a_pointer(self):
        with pytest.raises(LaunchError, match=r"arg 'n \+ 1' of launch 0 is 'n \+ 1' = 11 but parameter 'x' "
                                              r"of kernel 'k' is a pointer float\*"):
            plan(self.source("n + 1", "out", "n"))


class TestInOut:
    def test_output_starts_as_a_copy_and_the_input_name_binds_it(self):
        p = plan(block_of(RELU, inout=["x"], launch=[relu_launch(args=["x", "x", "n"])]))
        out = p.buffers[p.buffer_index("out")]
        assert (out.init, out.source) == ("copy", "x")
        assert [a.buffer for a in p.launches[0].args[:2]] == ["out", "out"]

    def test_explicit_output(self):
        p = plan(block_of(RELU, inout={"out": "x"}, launch=[relu_launch()]))
        assert p.buffers[p.buffer_index("out")].source == "x"

    def test_shape_mismatch(self):
        source = block_of(RELU, inout=["x"], launch=[relu_launch()])
        with pytest.raises(LaunchError, match=r"^line 2, inout 'x': inout 'x' \(float32, shape \(3,\)\) needs "
                                              r"exactly one output of its shape and dtype, found none; name "
                                              r'it: inout = \{out = "x"\}$'):
            resolve_plan(parse_submission(source), {"x": np.zeros(3, np.float32)},
                         {"out": ((10,), "float32")}, {"n": 10}, {})

    def test_not_an_input(self):
        with pytest.raises(LaunchError, match=r"inout names 'y', which is not an input; inputs: \['x'\]"):
            plan(block_of(RELU, inout=["y"], launch=[relu_launch()]))

    def test_inout_output_cannot_be_filled(self):
        with pytest.raises(LaunchError, match=r"fill names 'out', the inout output that starts as a copy "
                                              r"of 'x'; it cannot also start filled$"):
            plan(block_of(RELU, inout=["x"], launch=[relu_launch(fill={"out": 0})]))

    def test_malformed(self):
        refused(block_of(RELU, inout="x", launch=[relu_launch()]),
                r"^line 2, mutagym block: 'inout' must list inputs")


class TestFill:
    def source(self, fill: dict, dtype: str = "uint64", **extra) -> str:
        return block_of(f"__global__ void k({dtype}_t* t, float* out, int n) {{}}\n",
                        launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["t", "out", "n"],
                                 "fill": fill}, *extra.get("more", ())],
                        scratch=[{"name": "t", "dtype": dtype, "size": "n"}])

    @pytest.mark.parametrize("value, element", [(0, bytes(8)), ("n - 1", (9).to_bytes(8, "little")),
                                                (2**64 - 1, b"\xff" * 8)])
    def test_scratch_starts_filled(self, value, element):
        buffer = plan(self.source({"t": value})).buffers[-1]
        assert (buffer.init, buffer.fill) == ("fill", element)

    def test_float_output(self):
        out = plan(self.source({"out": float("-inf")})).buffers[1]
        assert np.frombuffer(out.fill, np.float32)[0] == -np.inf

    def test_value_that_does_not_fit(self):
        with pytest.raises(LaunchError, match=r"fill t = -1 does not fit uint64: -1 is out of range"):
            plan(self.source({"t": -1}))

    def test_input_is_read_only(self):
        with pytest.raises(LaunchError, match=r"fill names 'x', which is not an output or a scratch buffer; "
                                              r"inputs are read-only"):
            plan(self.source({"x": 0}))

    def test_fill_after_a_use(self):
        later = {"kernel": "k", "grid": [1], "block": [1], "args": ["t", "out", "n"], "fill": {"t": 1}}
        refused(self.source({}, more=[later]),
                r"buffer 't' is filled before launch 1, but launch 0 already passes it; a fill goes "
                r"before the buffer's first use$")

    @pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
    def test_every_integer_width(self, dtype):
        assert plan(self.source({"t": 7}, dtype=dtype)).buffers[-1].dtype == dtype


class TestBothBackendsStartAlike:
    """The `cuda` backend's job (built without a GPU) starts every buffer with the bytes the
    emulator's device memory holds: inout copies, fills, zeros and poison alike."""

    @pytest.mark.parametrize("entry", [e for e in PUBLIC if "inout" in e.id or "fill" in e.id],
                             ids=lambda e: e.id)
    def test_initial_bytes(self, entry: Public):
        sub = parse_submission(entry.source)
        case = entry.cases()[-1]
        p = resolve_plan(sub, case.inputs, case.outputs, case.dims, case.scalars)
        job = _build_job(p, case, "key", "ptx", b"", {"k": "k"})
        memory = DeviceMemory([p], [case.inputs])
        try:
            for buf in job.buffers:
                placed = memory.placements[0][buf.name]
                want = bytes(memory.map[placed.offset:placed.offset + placed.nbytes])
                assert _host_image(buf)[CANARY_BYTES:CANARY_BYTES + buf.nbytes].tobytes() == want, buf.name
        finally:
            memory.close()
        assert job.symbols == (("k", "k"),)

    def test_constant_bytes_travel_with_the_job(self):
        source = block_of(TestConstant.CODE, constant={"c_w": "w"},
                          launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["x", "out", "n"]}])
        case = RunCase({"x": np.ones(4, np.float32), "w": np.arange(3, dtype=np.float32)},
                       {"out": ((4,), "float32")}, {"n": 4})
        p = resolve_plan(parse_submission(source), case.inputs, case.outputs, case.dims, {})
        job = _build_job(p, case, "key", "ptx", b"", {"k": "k", "c_w": "c_w"})
        assert job.constants == (("c_w", np.arange(3, dtype=np.float32).tobytes()),)


class TestConstant:
    CODE = ("__constant__ float c_w[16];\n"
            "__global__ void k(const float* x, float* out, int n) { out[0] = c_w[0] * x[0]; }\n")

    def test_bound_to_an_input(self):
        source = block_of(self.CODE, constant={"c_w": "w"},
                          launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["x", "out", "n"]}])
        p = plan(source, w=np.ones(5, np.float32))
        assert [(c.symbol, c.input, c.nbytes) for c in p.constants] == [("c_w", "w", 20)]
        assert nvrtc_compile(source, names=("c_w",)).lowered == {"c_w": "c_w"}

    @pytest.mark.parametrize("schedule", SCHEDULES)
    def test_the_emulator_copies_it_before_every_case(self, schedule):
        """Each case's input reaches the array (the runner fills it, so a new value per case is not
        state kept between launches), in the instrumented and the plain build alike."""
        source = block_of(self.CODE, constant={"c_w": "w"},
                          launch=[{"kernel": "k", "grid": [40], "block": [1], "args": ["x", "out", "n"]}])
        cases = [RunCase({"x": np.full(4, 2, np.float32), "w": np.arange(k, k + 4, dtype=np.float32)},
                         {"out": ((4,), "float32")}, {"n": 4}) for k in range(4)]
        for k, result in enumerate(compiled(source).run_batch(cases, schedule=schedule)):
            assert result.ok, (result.outcome, result.message)
            assert result.outputs["out"][0] == 2 * k

    def test_an_array_too_small_for_its_input_is_a_memory_fault(self):
        source = block_of(self.CODE, constant={"c_w": "w"},
                          launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["x", "out", "n"]}])
        small, large = (RunCase({"x": np.ones(4, np.float32), "w": np.ones(n, np.float32)},
                                {"out": ((4,), "float32")}, {"n": 4}) for n in (16, 17))
        fits, overflows = compiled(source).run_batch([small, large])
        assert fits.ok, (fits.outcome, fits.message)
        assert overflows.outcome == "memory_fault"
        assert overflows.message == "__constant__ 'c_w' holds 64 bytes; its input has 68"

    def test_undeclared_symbol(self):
        refused(block_of(self.CODE, constant={"c_v": "w"},
                         launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["x", "out", "n"]}]),
                r"constant 'c_v': the source declares no __constant__ array of that name")

    def test_not_an_input(self):
        source = block_of(self.CODE, constant={"c_w": "out"},
                          launch=[{"kernel": "k", "grid": [1], "block": [1], "args": ["x", "out", "n"]}])
        with pytest.raises(LaunchError, match=r"constant 'c_w' = 'out': not an input; inputs: \['x'\]"):
            plan(source)
