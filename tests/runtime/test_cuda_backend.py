"""The `cuda` backend. Tests marked `gpu` run real kernels through CuPy and skip without a GPU;
the others check the parent's half (plan -> job, argument packing, error mapping) everywhere."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from mutagym.runtime.cases import RunCase, parse_schedule
from mutagym.runtime.buffers import DeviceMemory, initial_output
from mutagym.runtime.cuda_backend import (CANARY_BYTES, CudaKernel, _build_job, _classify_cuda_error,
                                          _host_image, _value_arg, cuda_available, shutdown_workers)
from mutagym.runtime.errors import CompileError, InfrastructureError
from mutagym.runtime.nvrtc import nvrtc_compile
from mutagym.runtime.plan import resolve_plan
from mutagym.runtime.submission import parse_submission

gpu = pytest.mark.skipif(not cuda_available(),
                         reason="needs a CUDA GPU and CuPy (pip install 'mutagym[cuda]')")


def submission(block: str, code: str) -> str:
    return f"/* mutagym\n{textwrap.dedent(block).strip()}\n*/\n{textwrap.dedent(code)}"


RELU = submission("""
    [[launch]]
    kernel = "relu"
    grid = ["ceil_div(n, 256)"]
    block = [256]
    args = ["x", "out", "n"]
    """, """
    extern "C" __global__ void relu(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    }
    """)

# One block per row; dynamic shared memory; a tree reduction with barriers.
ROW_SUM = submission("""
    [[launch]]
    kernel = "row_sum"
    grid = ["rows"]
    block = [256]
    shared_bytes = "256 * 4"
    args = ["x", "out", "rows", "cols"]
    """, """
    extern "C" __global__ void row_sum(const float* x, float* out, int rows, int cols) {
        extern __shared__ float partial[];
        const float* row = x + (long)blockIdx.x * cols;
        float acc = 0.0f;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
        partial[threadIdx.x] = acc;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
            __syncthreads();
        }
        if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
    }
    """)

# Two launches: per-block partial sums into poisoned scratch, then one thread finishes; a
# zero-initialised scratch counter proves `init = "zero"`.
TOTAL = submission("""
    [[launch]]
    kernel = "partial_sums"
    grid = ["ceil_div(n, 256)"]
    block = [256]
    args = ["x", "partial", "count", "n"]

    [[launch]]
    kernel = "finish"
    grid = [1]
    block = [1]
    args = ["partial", "count", "total", "blocks", "n"]

    [[scratch]]
    name = "partial"
    dtype = "float32"
    size = "ceil_div(n, 256)"

    [[scratch]]
    name = "count"
    dtype = "int32"
    size = "1"
    init = "zero"
    """, """
    extern "C" __global__ void partial_sums(const float* x, float* partial, int* count, int n) {
        __shared__ float s[256];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        s[threadIdx.x] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int stride = 128; stride > 0; stride /= 2) {
            if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
            __syncthreads();
        }
        if (threadIdx.x == 0) { partial[blockIdx.x] = s[0]; atomicAdd(count, 1); }
    }
    extern "C" __global__ void finish(const float* partial, const int* count, float* total,
                                      int* blocks, int n) {
        float acc = 0.0f;
        for (int b = 0; b < (n + 255) / 256; ++b) acc += partial[b];
        total[0] = acc;
        blocks[0] = count[0];
    }
    """)

# Scalars of several types reach the kernel bit for bit.
AFFINE = submission("""
    [[launch]]
    kernel = "affine"
    grid = ["ceil_div(n, 128)"]
    block = [128]
    args = ["x", "out", "n", "scale", "shift", "offset"]
    """, """
    extern "C" __global__ void affine(const float* x, double* out, int n, float scale,
                                      double shift, long offset) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = (double)(x[i] * scale) + shift + (double)offset;
    }
    """)

# Writes only the first half of each output: the rest must stay poisoned.
HALF = submission("""
    [[launch]]
    kernel = "half_writer"
    grid = [1]
    block = ["n"]
    args = ["f", "k", "n"]
    """, """
    extern "C" __global__ void half_writer(float* f, int* k, int n) {
        if (threadIdx.x < n / 2) { f[threadIdx.x] = 1.0f; k[threadIdx.x] = 7; }
    }
    """)

HALF_PRECISION = submission("""
    [[launch]]
    kernel = "twice"
    grid = [1]
    block = ["n"]
    args = ["x", "out", "n"]
    """, """
    #include <cuda_bf16.h>
    extern "C" __global__ void twice(const __nv_bfloat16* x, __nv_bfloat16* out, int n) {
        int i = threadIdx.x;
        if (i < n) out[i] = __float2bfloat16(__bfloat162float(x[i]) * 2.0f);
    }
    """)


def faulty(body: str, params: str = "float* x, float* out, int n") -> str:
    """A one-launch submission over x -> out whose kernel body is *body*."""
    return submission("""
        [[launch]]
        kernel = "k"
        grid = ["ceil_div(n, 64)"]
        block = [64]
        args = ["x", "out", "n"]
        """, f"""
        extern "C" __global__ void k({params}) {{
            int i = blockIdx.x * blockDim.x + threadIdx.x;
        {textwrap.indent(textwrap.dedent(body), "    ")}
        }}
        """)


def vector_case(n: int = 1000, seed: int = 0) -> RunCase:
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return RunCase({"x": x}, {"out": ((n,), "float32")}, {"n": n})


def run_one(source: str, case: RunCase, **kwargs):
    [result] = CudaKernel(source).run_batch([case], **kwargs)
    return result


# ---------------------------------------------------------------------------------------------
# Everywhere: the parent's half.


class TestParseSchedule:
    @pytest.mark.parametrize("schedule, parsed", [
        ("ascending", ("ascending", None)), ("descending", ("descending", None)),
        ("shuffled", ("shuffled", None)), ("shuffled:42", ("shuffled", 42))])
    def test_accepted(self, schedule, parsed):
        """The three orders, and a seed for `shuffled` only."""
        assert parse_schedule(schedule) == parsed

    @pytest.mark.parametrize("schedule", ["random", "ascending:1", "shuffled:x", "", "Ascending"])
    def test_refused(self, schedule):
        """Anything else is a ValueError that quotes it and lists the forms."""
        with pytest.raises(ValueError, match=rf"^unknown schedule {schedule!r}; expected 'ascending', "
                                             r"'descending' or 'shuffled\[:seed\]'$"):
            parse_schedule(schedule)


class TestRunBatchArguments:
    def test_unknown_schedule_is_refused_before_running(self):
        """A GPU has no thread order, but a typo in one is still an error."""
        with pytest.raises(ValueError, match="unknown schedule 'backwards'"):
            CudaKernel(RELU).run_batch([vector_case()], schedule="backwards")

    def test_timeout_must_be_positive(self):
        with pytest.raises(ValueError, match=r"^timeout_s must be positive, got 0$"):
            CudaKernel(RELU).run_batch([vector_case()], timeout_s=0)

    def test_empty_batch(self):
        assert CudaKernel(RELU).run_batch([]) == []

    def test_compile_error_at_construction(self):
        """NVRTC is the gate: a kernel it rejects fails before any GPU is needed."""
        broken = RELU.replace("out[i] = x[i] > 0.0f", "out[i] = y[i] > 0.0f")
        with pytest.raises(CompileError, match=r'^line 11: NVRTC rejected the kernel: identifier "y"'):
            CudaKernel(broken)

    @pytest.mark.skipif(cuda_available(), reason="checks the error raised without a GPU")
    def test_no_gpu_is_infrastructure_error(self):
        """Without CuPy or a device the backend says so instead of failing somewhere deep."""
        with pytest.raises(InfrastructureError, match=r"^no CUDA GPU visible to CuPy"):
            CudaKernel(RELU).run_batch([vector_case()])


class TestBuildJob:
    def test_buffers_are_filled_as_the_plan_says(self):
        """Inputs carry their bytes; outputs and poisoned scratch are poisoned in the child from the
        case's seed (no bytes travel); zero scratch is 0."""
        sub = parse_submission(TOTAL)
        case = RunCase({"x": np.arange(300, dtype=np.float32)},
                       {"total": ((1,), "float32"), "blocks": ((1,), "int32")}, {"n": 300})
        plan = resolve_plan(sub, case.inputs, case.outputs, case.dims, case.scalars)
        job = _build_job(plan, case, "key", "cubin", b"image")
        buffers = {b.name: b for b in job.buffers}
        assert buffers["x"].data == case.inputs["x"].tobytes() and buffers["x"].fill is None
        for name in ("total", "blocks", "partial"):
            assert buffers[name].fill is None and buffers[name].data is None, name
        assert buffers["partial"].nbytes == 2 * 4
        assert (buffers["count"].fill, buffers["count"].itemsize) == (0, 4)
        assert len({b.digest for b in job.buffers}) == 1
        assert [launch.kernel for launch in job.launches] == ["partial_sums", "finish"]

    def test_poison_and_canaries_are_the_cpu_emulators_bytes(self):
        """A buffer's image holds the bytes the CPU emulator's memory holds at the same positions:
        the output's poison, and the poison past either end that the canaries stand for."""
        sub = parse_submission(TOTAL)
        case = RunCase({"x": np.arange(300, dtype=np.float32)},
                       {"total": ((1,), "float32"), "blocks": ((1,), "int32")}, {"n": 300})
        plan = resolve_plan(sub, case.inputs, case.outputs, case.dims, case.scalars)
        job = _build_job(plan, case, "key", "cubin", b"image")
        memory = DeviceMemory([plan], [case.inputs])
        try:
            for buf in job.buffers:
                host = _host_image(buf)
                p = memory.placements[0][buf.name]
                head = min(CANARY_BYTES, p.offset - p.region[0])
                tail = min(CANARY_BYTES, p.region[1] - p.offset - p.nbytes)
                cpu = bytes(memory.map[p.offset - head:p.offset + p.nbytes + tail])
                gpu = host[CANARY_BYTES - head:CANARY_BYTES + buf.nbytes + tail].tobytes()
                assert cpu == gpu, buf.name
            assert _host_image(job.buffers[1])[CANARY_BYTES:CANARY_BYTES + 4].tobytes() == \
                initial_output(case, "total").tobytes()
        finally:
            memory.close()

    def test_non_contiguous_input_is_copied_in_c_order(self):
        x = np.arange(12, dtype=np.float32).reshape(3, 4).T
        case = RunCase({"x": x}, {"out": ((12,), "float32")}, {"n": 12})
        plan = resolve_plan(parse_submission(RELU), case.inputs, case.outputs, case.dims, {})
        job = _build_job(plan, case, "key", "cubin", b"image")
        assert job.buffers[0].data == np.ascontiguousarray(x).tobytes()


SPIN = faulty("volatile float* flag = x;\nwhile (flag[0] == flag[0] || n >= 0) { }")
WILD = faulty("if (i == 0) out[(long)1 << 38] = 1.0f;")
TRAP = faulty("if (i == 3) __trap();\nif (i < n) out[i] = x[i];")
WRITES_INPUT = faulty("if (i < n) { out[i] = x[i]; x[i] = 0.0f; }")
PAST_END = faulty("if (i < n) out[i] = x[i];\nif (i == 0) out[n + 1] = 1.0f;")
BEFORE_START = faulty("if (i < n) out[i] = x[i];\nif (i == 0) out[-1] = 1.0f;")


class TestGpuSourcesCompile:
    @pytest.mark.parametrize("source", [RELU, ROW_SUM, TOTAL, AFFINE, HALF, HALF_PRECISION, SPIN,
                                        WILD, TRAP, WRITES_INPUT, PAST_END, BEFORE_START],
                             ids=["relu", "row_sum", "total", "affine", "half", "bf16", "spin",
                                  "wild", "trap", "writes_input", "past_end", "before_start"])
    def test_parses_and_compiles_for_a_gpu(self, source):
        """Every kernel the GPU tests run parses and builds a cubin, so only the GPU is missing."""
        sub = parse_submission(source)
        assert nvrtc_compile(sub.source, arch="sm_90").cubin.startswith(b"\x7fELF")


class TestValueArg:
    @pytest.mark.parametrize("raw", [np.float32(np.nan).tobytes(), np.float64(-0.0).tobytes(),
                                     np.int32(-5).tobytes(), np.uint8(200).tobytes(),
                                     np.int16(-2).tobytes()])
    def test_bits_survive(self, raw):
        """The scalar handed to CuPy holds exactly the plan's bytes (NaN payloads, -0.0 too)."""
        value = _value_arg(raw)
        assert value.nbytes == len(raw) and value.tobytes() == raw


class TestClassifyCudaError:
    @pytest.mark.parametrize("message, outcome", [
        ("cudaErrorIllegalAddress: an illegal memory access was encountered", "memory_fault"),
        ("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", "memory_fault"),
        ("cudaErrorMisalignedAddress: misaligned address", "memory_fault"),
        ("CUDA_ERROR_INVALID_ADDRESS_SPACE: invalid address space", "memory_fault"),
        ("cudaErrorLaunchTimeout: the launch timed out and was terminated", "timeout"),
        ("cudaErrorLaunchFailure: unspecified launch failure", "crash"),
        ("CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered", "crash"),
        ("cudaErrorAssert: device-side assert triggered", "crash"),
        ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch", "crash"),
    ])
    def test_mapping(self, message, outcome):
        assert _classify_cuda_error(message) == outcome


# ---------------------------------------------------------------------------------------------
# On a GPU: real kernels, real faults.


@pytest.fixture(scope="module")
def fresh_workers():
    yield
    shutdown_workers()


@pytest.mark.gpu
@gpu
@pytest.mark.usefixtures("fresh_workers")
class TestOnGpu:
    def test_elementwise(self):
        case = vector_case(1000)
        result = run_one(RELU, case)
        assert result.outcome == "ok", result.message
        np.testing.assert_array_equal(result.outputs["out"], np.maximum(case.inputs["x"], 0))
        assert result.outputs["out"].dtype == np.float32 and result.stdout == ""

    def test_batch_runs_every_case_in_order(self):
        cases = [vector_case(n, seed=n) for n in (1, 255, 256, 4097)]
        results = CudaKernel(RELU).run_batch(cases, schedule="shuffled:3")
        for i, (case, result) in enumerate(zip(cases, results)):
            assert result.ok, f"case {i}: {result.message}"
            np.testing.assert_array_equal(result.outputs["out"], np.maximum(case.inputs["x"], 0),
                                          err_msg=f"case {i}")

    def test_shared_memory_reduction(self):
        x = np.random.default_rng(1).standard_normal((37, 1000)).astype(np.float32)
        case = RunCase({"x": x}, {"out": ((37,), "float32")}, {"rows": 37, "cols": 1000})
        result = run_one(ROW_SUM, case)
        assert result.ok, result.message
        np.testing.assert_allclose(result.outputs["out"], x.astype(np.float64).sum(axis=1),
                                   rtol=1e-5, atol=1e-4)

    def test_two_launches_with_scratch(self):
        x = np.random.default_rng(2).random(1000).astype(np.float32)
        case = RunCase({"x": x}, {"total": ((1,), "float32"), "blocks": ((1,), "int32")},
                       {"n": 1000})
        result = run_one(TOTAL, case)
        assert result.ok, result.message
        np.testing.assert_allclose(result.outputs["total"], [x.astype(np.float64).sum()], rtol=1e-5)
        assert result.outputs["blocks"].tolist() == [4]

    def test_scalars_are_passed_bit_exactly(self):
        x = np.linspace(-1, 1, 300, dtype=np.float32)
        case = RunCase({"x": x}, {"out": ((300,), "float64")}, {"n": 300},
                       {"scale": 0.1, "shift": 1e-300, "offset": -(1 << 40)})
        result = run_one(AFFINE, case)
        assert result.ok, result.message
        expected = (x * np.float32(0.1)).astype(np.float64) + 1e-300 + float(-(1 << 40))
        np.testing.assert_array_equal(result.outputs["out"], expected)

    def test_unwritten_outputs_stay_poisoned(self):
        case = RunCase({}, {"f": ((8,), "float32"), "k": ((8,), "int32")}, {"n": 8})
        result = run_one(HALF, case)
        assert result.ok, result.message
        assert result.outputs["f"][:4].tolist() == [1.0] * 4
        assert result.outputs["f"][4:].tobytes() == initial_output(case, "f")[4:].tobytes()
        assert result.outputs["k"][4:].tobytes() == initial_output(case, "k")[4:].tobytes()

    def test_bfloat16(self):
        import ml_dtypes
        x = np.array([1.5, -2.0, 0.25, 3.0], dtype=ml_dtypes.bfloat16)
        case = RunCase({"x": x}, {"out": ((4,), "bfloat16")}, {"n": 4})
        result = run_one(HALF_PRECISION, case)
        assert result.ok, result.message
        assert result.outputs["out"].astype(np.float32).tolist() == [3.0, -4.0, 0.5, 6.0]

    def test_write_to_input_is_memory_fault(self):
        result = run_one(WRITES_INPUT, vector_case())
        assert result.outcome == "memory_fault"
        assert result.message.startswith("kernel wrote to input 'x' (element 0 changed)")
        assert result.outputs == {}

    def test_write_past_the_end_is_memory_fault(self):
        result = run_one(PAST_END, vector_case(1000))
        assert result.outcome == "memory_fault"
        assert result.message == ("write past the end of output 'out' (element 1001, size 1000) "
                                  "in launch 0 (kernel 'k')")

    def test_write_before_the_start_is_memory_fault(self):
        result = run_one(BEFORE_START, vector_case(1000))
        assert result.outcome == "memory_fault"
        assert result.message.startswith("write before the start of output 'out' (4 bytes before)")

    def test_illegal_address_then_recovery(self):
        """A wild pointer poisons the context; the next case runs in a fresh worker."""
        bad = run_one(WILD, vector_case())
        assert bad.outcome == "memory_fault"
        assert "launch 0 (kernel 'k')" in bad.message and "illegal" in bad.message.lower()
        assert run_one(RELU, vector_case()).ok

    def test_trap_is_crash(self):
        result = run_one(TRAP, vector_case())
        assert result.outcome == "crash", result.message
        assert result.message.startswith("launch 0 (kernel 'k'): ")

    def test_infinite_loop_times_out_and_parent_survives(self):
        """A hang is killed after timeout_s; this process lives on and the next case runs."""
        results = CudaKernel(SPIN).run_batch([vector_case(), vector_case()], timeout_s=2.0)
        assert [r.outcome for r in results] == ["timeout", "timeout"]
        assert results[0].message.startswith("no result within 2 s in launch 0 (kernel 'k')")
        assert os.getpid() > 0  # still here
        assert run_one(RELU, vector_case()).ok
