"""Hostile and broken submissions: each one ends in an outcome or a clear error, and the parent lives on.

A kernel fault is an outcome of the run (`memory_fault`, `sync_error`, `timeout`, `crash`,
`forbidden_syscall`) with a message that says where; a submission that cannot be built or launched
is a `SubmissionError` (`CompileError`, `LaunchError`) naming the line or the argument at fault.
Every test pins the outcome *and* the key words of its message. Two independent walls stand
between a submission and the system: the static and object checks before anything runs, and the
seccomp sandbox around the child that runs kernels; the last tests bypass the first wall to
show that the second one holds on its own.
"""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

import mutagym.runtime.cpu_backend as cpu_backend
from mutagym.runtime import LaunchError, RunCase, SubmissionError, compile
from submission_text import compiled, launch, submission




def line_of(source: str, text: str) -> int:
    """1-based line of the first line of *source* containing *text*."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


X = np.arange(1000, dtype=np.float32)
OUT = {"out": ((1000,), "float32")}
N = {"n": 1000}
ONE_D = launch("k", ["ceil_div(n, 128)"], [128], ["x", "out", "n"])


def kernel_1d(body: str, *, prelude: str = "") -> str:
    """`k(const float* x, float* out, int n)` with *body*, launched over n threads."""
    return submission(prelude + 'extern "C" __global__ void k(const float* x, float* out, int n) {\n'
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n}\n", ONE_D)


COPY = kernel_1d("if (i < n) out[i] = x[i];")


# ============================================================================ memory faults

class TestMemoryFaults:
    def test_writing_an_input_names_the_input(self):
        """Inputs are mapped read-only: a write is a memory_fault naming the input and element."""
        k = compiled(kernel_1d("if (i < n) { out[i] = x[i]; const_cast<float*>(x)[i] = 0.0f; }"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "memory_fault"
        assert "write to element 0 of input 'x': inputs are read-only" in r.message
        assert "launch 0 block (0,0,0) thread (0,0,0)" in r.message

    def test_reading_past_an_input_names_the_buffer(self):
        """One element past the end of an input lands on a guard page."""
        k = compiled(kernel_1d("if (i < n) out[i] = x[i + 1];"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "memory_fault"
        assert "read past the end of input 'x' (element 1000, size 1000)" in r.message
        assert "thread (103,0,0)" in r.message   # i = 999 is thread 103 of block 7

    def test_writing_past_an_output_names_the_buffer(self):
        """A write one past the end of an output is caught too."""
        k = compiled(kernel_1d("if (i < n) out[i + 1] = x[i];"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "memory_fault"
        assert "write past the end of output 'out' (element 1000, size 1000)" in r.message

    def test_reading_before_a_buffer(self):
        """x[-1] lands on the guard page before the buffer."""
        k = compiled(kernel_1d("if (i < n) out[i] = x[i - 1024];"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "memory_fault"
        assert "input 'x'" in r.message and "read" in r.message

    def test_null_pointer(self):
        """Dereferencing a null pointer is a memory_fault at address 0x0."""
        k = compiled(kernel_1d("const float* p = i < 0 ? x : nullptr;\nif (i < n) out[i] = p[i];"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "memory_fault"
        assert "invalid read at address 0x0" in r.message

    def test_wild_read_is_told_relative_to_device_memory(self):
        """A read far from every buffer (4 TiB below: unmapped) names its distance from device
        memory, not a raw address, so the message is the same in every run (the runner's mappings
        move with ASLR)."""
        k = compiled(kernel_1d("if (i == 0) out[i] = x[-(1L << 40)];"))
        first, second = (k.run({"x": X}, OUT, N) for _ in range(2))
        assert first.outcome == "memory_fault"
        assert "bytes before device memory (outside every buffer)" in first.message
        assert first.message == second.message

    def test_addresses_are_the_same_in_every_run(self):
        """The runner maps everything at fixed addresses (no ASLR), so a kernel that reads the
        neighbours of a __shared__ array (the kernel object's table of runtime addresses, among
        others) or prints a pointer gets the same bytes in every run: verdicts reproduce."""
        k = compiled(kernel_1d("""
            __shared__ float tile[256];
            tile[threadIdx.x] = 1.0f;
            __syncthreads();
            if (i < n) out[i] = tile[(int)threadIdx.x - 256];
            if (i == 0) printf("%p %p", (void*)tile, (void*)x);
        """))
        first, second = (k.run({"x": X}, OUT, N) for _ in range(2))
        assert first.ok and first.stdout and first.stdout == second.stdout
        assert first.outputs["out"].tobytes() == second.outputs["out"].tobytes()

    def test_misaligned_vector_load(self):
        """A float4 load from x + 1 is misaligned, as on a GPU: a memory_fault, not a silent load."""
        k = compiled(kernel_1d("if (i < n / 4 - 1) reinterpret_cast<float4*>(out)[i] = "
                               "reinterpret_cast<const float4*>(x + 1)[i];"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "memory_fault"
        assert "misaligned" in r.message


# A fault ends the child that runs a batch; the parent must restart it at the next case. The runner
# prints the faulting case's result line and exits with status 3 (fault) or 4 (sync_error), and the
# parent, which has already moved on to the next case, treats that exit as "no result" and raises.
GATHER = submission("""
    extern "C" __global__ void gather(const float* x, const int* idx, float* out, int d, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (idx[blockIdx.x * blockDim.x] < 0) {  // a negative first index: a divergent barrier
            if (threadIdx.x % 2)
                __syncthreads();
            else
                __syncthreads();
        }
        if (i < n) out[i] = x[idx[i]] + (float)(i / d);
    }
""", launch("gather", ["ceil_div(n, 64)"], [64], ["x", "idx", "out", "d", "n"]))


class TestFaultsInsideABatch:
    @pytest.mark.parametrize("fault, outcome, words", [
        ("index", "memory_fault", "read past the end of input 'x'"),
        ("divide", "crash", "arithmetic exception"),
        ("barrier", "sync_error", "divergent __syncthreads"),
    ])
    def test_case_2_of_4_faults_and_cases_1_3_4_are_ok(self, fault, outcome, words):
        """A batch keeps going after a faulting case: cases 1, 3 and 4 are ok with right outputs."""
        k = compiled(GATHER)
        x = np.arange(100, dtype=np.float32) * 2
        good = np.arange(100, dtype=np.int32)[::-1].copy()
        bad, d = good.copy(), 1000
        if fault == "index":
            bad[57] = 100
        elif fault == "barrier":
            bad[0] = -1
        else:
            d = 0
        cases = [RunCase({"x": x, "idx": idx}, {"out": ((100,), "float32")}, {"n": 100, "d": dd})
                 for idx, dd in ((good, 1000), (bad, d), (good[::-1].copy(), 1000), (good, 1000))]
        results = k.run_batch(cases)
        assert [r.outcome for r in results] == ["ok", outcome, "ok", "ok"]
        assert words in results[1].message
        for case, r in zip(cases, results):
            if r.ok:
                np.testing.assert_array_equal(r.outputs["out"], x[case.inputs["idx"]])
        assert results[1].outputs == {}

    def test_fault_in_the_last_case_of_a_batch(self):
        """When the faulting case is the last one, the earlier cases keep their ok results."""
        k = compiled(GATHER)
        x = np.arange(100, dtype=np.float32)
        good = np.arange(100, dtype=np.int32)
        bad = good.copy()
        bad[3] = 100
        cases = [RunCase({"x": x, "idx": idx}, {"out": ((100,), "float32")}, {"n": 100, "d": 1000})
                 for idx in (good, good, bad)]
        results = k.run_batch(cases)
        assert [r.outcome for r in results] == ["ok", "ok", "memory_fault"]
        assert "thread (3,0,0)" in results[2].message
        np.testing.assert_array_equal(results[1].outputs["out"], x)


# ============================================================================ hangs and barriers

INFINITE_LOOP = kernel_1d("""
    volatile int spin = 0;
    while (x[0] > 0.0f) spin = spin + 1;
    if (i < n) out[i] = x[i];
""")


class TestHangsAndBarriers:
    def test_infinite_loop_times_out_and_the_kernel_still_runs(self):
        """A loop that never ends is a timeout after timeout_s; the same Kernel then runs normally."""
        k = compiled(INFINITE_LOOP)
        r = k.run({"x": np.ones(8, np.float32)}, {"out": ((8,), "float32")}, {"n": 8}, timeout_s=1)
        assert r.outcome == "timeout"
        assert "no result within 1 s" in r.message
        x = -np.arange(8, dtype=np.float32)
        r = k.run({"x": x}, {"out": ((8,), "float32")}, {"n": 8}, timeout_s=5)
        assert r.outcome == "ok"
        np.testing.assert_array_equal(r.outputs["out"], x)

    def test_timeout_in_a_batch_does_not_lose_later_cases(self):
        """After a case times out, the remaining cases of the batch still run."""
        k = compiled(INFINITE_LOOP)
        hang = RunCase({"x": np.ones(8, np.float32)}, {"out": ((8,), "float32")}, {"n": 8})
        fine = RunCase({"x": -np.ones(8, np.float32)}, {"out": ((8,), "float32")}, {"n": 8})
        assert [r.outcome for r in k.run_batch([fine, hang, fine], timeout_s=1)] == ["ok", "timeout", "ok"]

    def test_a_case_of_its_own_limit_ends_at_it_and_the_others_keep_the_batchs(self):
        """`RunCase.timeout_s` bounds that case alone (the reward gate's time envelope); every
        finished case reports the runner's CPU seconds it took."""
        k = compiled(INFINITE_LOOP)
        hang = RunCase({"x": np.ones(8, np.float32)}, {"out": ((8,), "float32")}, {"n": 8}, timeout_s=0.5)
        fine = RunCase({"x": -np.ones(8, np.float32)}, {"out": ((8,), "float32")}, {"n": 8})
        results = k.run_batch([fine, hang, fine], timeout_s=120)
        assert [r.outcome for r in results] == ["ok", "timeout", "ok"]
        assert "no result within 0.5 s" in results[1].message and results[1].seconds >= 0.5
        assert all(r.seconds is not None and r.seconds >= 0 for r in results)

    def test_a_billion_blocks_are_refused_before_they_run(self):
        """A grid of 10^9 blocks is legal for CUDA but would burn the judge's time on every input:
        the per-launch thread budget refuses it as a launch error, naming the budget."""
        k = compiled(submission("""
            extern "C" __global__ void k(float* out) {
                if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = 1.0f;
            }
        """, launch("k", [10**9], [32], ["out"])))
        with pytest.raises(LaunchError, match=r"the launch has 32,000,000,000 threads .* at most "
                                              r"4,194,304 are run"):
            k.run({}, {"out": ((1,), "float32")}, {}, timeout_s=1)

    def test_the_largest_budgeted_launch_finishes(self):
        """The budget's floor (2^22 threads) of a trivial kernel runs to the end."""
        k = compiled(submission("""
            extern "C" __global__ void k(float* out) {
                if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = 1.0f;
            }
        """, launch("k", [2**17], [32], ["out"])))
        r = k.run({}, {"out": ((1,), "float32")}, {}, timeout_s=60)
        assert r.ok and r.outputs["out"][0] == 1.0

    def test_divergent_syncthreads(self):
        """Threads waiting at two different __syncthreads lines is a sync_error naming both lines."""
        source = kernel_1d("""
            if (threadIdx.x < 16) {
                __syncthreads();
            } else {
                __syncthreads();
            }
            if (i < n) out[i] = x[i];
        """)
        first = line_of(source, "__syncthreads();")
        k = compiled(source)
        for schedule in ("ascending", "descending", "shuffled:3"):
            r = k.run({"x": X}, OUT, N, schedule=schedule)
            assert r.outcome == "sync_error", schedule
            assert "divergent __syncthreads" in r.message
            assert f"line {first}" in r.message and f"line {first + 2}" in r.message

    def test_divergent_syncthreads_on_one_line(self):
        """Two barriers on the same line are still two sites: a divergent pair is a sync_error."""
        k = compiled(kernel_1d("""
            if (threadIdx.x < 16) __syncthreads(); else __syncthreads();
            if (i < n) out[i] = x[i];
        """))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "sync_error" and "divergent __syncthreads" in r.message

    def test_syncthreads_skipped_by_some_threads_when_others_wait_twice(self):
        """A barrier inside a branch taken by half the block, in a loop, never releases consistently."""
        k = compiled(kernel_1d("""
            for (int r = 0; r < 2; ++r) {
                if (threadIdx.x % 2 == r) __syncthreads();
                else { __syncthreads(); __syncthreads(); }
            }
            if (i < n) out[i] = x[i];
        """))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "sync_error"
        assert "__syncthreads" in r.message

    @pytest.mark.parametrize("schedule", ["ascending", "descending"])
    def test_shuffle_waiting_for_an_exited_lane(self, schedule):
        """A full-mask shuffle whose upper lanes returned early is a sync_error, not a hang."""
        k = compiled(kernel_1d("""
            if (threadIdx.x % 32 >= 16) return;
            float v = i < n ? x[i] : 0.0f;
            v += __shfl_down_sync(0xffffffffu, v, 1);
            if (i < n) out[i] = v;
        """))
        r = k.run({"x": X}, OUT, N, schedule=schedule)
        assert r.outcome == "sync_error"
        assert "__shfl_down_sync" in r.message
        assert "exited" in r.message

    def test_shuffle_from_a_lane_outside_its_mask(self):
        """A lane calling a shuffle whose mask lacks its own bit is a sync_error naming the lane."""
        k = compiled(kernel_1d("""
            float v = __shfl_sync(0x0000ffffu, x[i], 0);
            if (i < n) out[i] = v;
        """))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "sync_error"
        assert "called by lane 16 whose bit is not in mask 0xffff" in r.message


# ============================================================================ crashes

RECURSION = """
    __device__ int depth(int n, const float* x) {
        volatile float pad[64];
        pad[n % 64] = x[0];
        int r = n <= 0 ? 0 : depth(n - 1, x);
        pad[(n + 1) % 64] = (float)r;
        return (int)pad[(n + 1) % 64] + 1;   // a volatile read after the call: no tail call
    }
"""


class TestCrashes:
    @pytest.mark.parametrize("fibers", [False, True], ids=["plain", "fibers"])
    def test_unbounded_recursion_is_a_stack_overflow(self, fibers):
        """Recursion past the stack is a crash called a stack overflow, on the main stack and on fibers."""
        sync = "__syncthreads();" if fibers else ""
        k = compiled(kernel_1d(f"{sync}\nif (i < n) out[i] = (float)depth(n * 1000000, x);",
                               prelude=textwrap.dedent(RECURSION)))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "crash"
        assert "stack overflow" in r.message

    def test_bounded_recursion_is_fine(self):
        """The same recursive function with a small depth runs normally."""
        k = compiled(kernel_1d("if (i < n) out[i] = (float)depth(i % 7, x);",
                               prelude=textwrap.dedent(RECURSION)))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "ok", r.message
        assert r.outputs["out"][6] == 7.0

    def test_integer_division_by_zero(self):
        """Integer division by zero traps on the CPU: a crash that says so."""
        k = compiled(submission("""
            extern "C" __global__ void k(const int* x, int* out, int d, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = x[i] / d;
            }
        """, launch("k", ["ceil_div(n, 64)"], [64], ["x", "out", "d", "n"])))
        x = np.arange(10, dtype=np.int32)
        r = k.run({"x": x}, {"out": ((10,), "int32")}, {"n": 10, "d": 0})
        assert r.outcome == "crash"
        assert "arithmetic exception (integer division by zero?)" in r.message
        ok = k.run({"x": x}, {"out": ((10,), "int32")}, {"n": 10, "d": 3})
        np.testing.assert_array_equal(ok.outputs["out"], x // 3)

    def test_trap(self):
        """__trap() is a crash naming the trap, with the thread that hit it."""
        k = compiled(kernel_1d("if (i == 77) __trap();\nif (i < n) out[i] = x[i];"))
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "crash"
        assert "trap (__trap() or an illegal instruction)" in r.message
        assert "thread (77,0,0)" in r.message


# ============================================================================ refused before compiling

class TestStaticChecks:
    @pytest.mark.parametrize("call, name", [
        ('extern "C" int system(const char*);', "system(\"rm -rf /\")"),
        ('extern "C" int fork(void);', "fork()"),
        ('extern "C" int open(const char*, int);', "open(\"/etc/passwd\", 0)"),
    ], ids=["system", "fork", "open"])
    def test_os_calls_from_device_code(self, call, name):
        """Declaring and calling system/fork/open is refused by the static check, naming the line."""
        source = kernel_1d(f"if (i == 0) {name};\nif (i < n) out[i] = x[i];", prelude=call + "\n")
        word = name.split("(")[0]
        with pytest.raises(SubmissionError, match=rf"^line {line_of(source, call)}: '{word}' is a "
                                                  "host/OS call; kernel code may only compute on its buffers"):
            compile(source, backend="cpu")

    def test_include_of_a_system_file(self):
        """#include "/etc/passwd" is refused with the allowed headers listed."""
        source = kernel_1d("if (i < n) out[i] = x[i];", prelude='#include "/etc/passwd"\n')
        with pytest.raises(SubmissionError, match=rf"^line {line_of(source, 'passwd')}: #include "
                                                  r"'\"/etc/passwd\"' is not allowed; allowed headers: cuda_fp16\.h"):
            compile(source, backend="cpu")

    @pytest.mark.parametrize("asm", ['asm("nop");', '__asm__ volatile("int3");', 'asm volatile("trap;");'])
    def test_inline_assembly(self, asm):
        """Inline assembly in any spelling is refused, naming the line."""
        source = kernel_1d(f"{asm}\nif (i < n) out[i] = x[i];")
        with pytest.raises(SubmissionError, match=rf"^line {line_of(source, asm)}: inline assembly "
                                                  r"\('(asm|__asm__)'\) is not allowed"):
            compile(source, backend="cpu")

    def test_empty_text(self):
        """An empty or blank text is refused as empty."""
        for text in ("", "  \n\t\n"):
            with pytest.raises(SubmissionError, match=r"^submission: text is empty"):
                compile(text, backend="cpu")

    def test_a_megabyte_of_random_bytes(self):
        """1 MB of random bytes is refused on size before anything else."""
        junk = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
        with pytest.raises(SubmissionError, match=r"^submission: text is 1048576 bytes; at most 262144"):
            compile(junk, backend="cpu")

    def test_random_bytes_under_the_size_limit(self):
        """100 KB of random bytes is refused as not UTF-8, naming the offset."""
        junk = np.random.default_rng(1).integers(0, 256, 100_000, dtype=np.uint8).tobytes()
        with pytest.raises(SubmissionError, match=r"not UTF-8.*byte 0x[0-9a-f]{2} at offset \d+"):
            compile(junk, backend="cpu")

    def test_no_launch_block(self):
        """Plain CUDA without the /* mutagym */ block says what is missing."""
        with pytest.raises(SubmissionError, match=r"no /\* mutagym \.\.\. \*/ block found"):
            compile('extern "C" __global__ void k(float* out) { out[0] = 1.0f; }', backend="cpu")


# ============================================================================ launch plans

class TestLaunchPlans:
    def test_block_of_2048_threads_constant(self):
        """A constant block of 2048 threads is a LaunchError at compile time."""
        source = submission('extern "C" __global__ void k(float* out) { out[threadIdx.x] = 1.0f; }',
                            launch("k", [1], [2048], ["out"]))
        with pytest.raises(LaunchError, match=r"block\[0\] = '2048' evaluates to 2048; CUDA allows 1 to 1024"):
            compile(source, backend="cpu")

    def test_block_of_2048_threads_from_dims(self):
        """A 2-d block of 64 x 32 threads passes each axis but not the per-block total: LaunchError at run."""
        k = compiled(submission('extern "C" __global__ void k(float* out) { out[threadIdx.x] = 1.0f; }',
                                launch("k", [1], ["bx", "by"], ["out"])))
        with pytest.raises(LaunchError, match=r"block = \['bx', 'by'\] evaluates to \(64, 32\) = 2048 threads; "
                                              r"CUDA allows at most 1024 threads per block"):
            k.run({}, {"out": ((64,), "float32")}, {"bx": 64, "by": 32})

    def test_dynamic_shared_memory_over_the_limit(self):
        """shared_bytes = 65536 is more than the 48 KiB a launch may request: LaunchError."""
        source = submission("""
            extern "C" __global__ void k(float* out) {
                extern __shared__ float s[];
                s[threadIdx.x] = 1.0f;
                out[threadIdx.x] = s[threadIdx.x];
            }
        """, launch("k", [1], [32], ["out"], shared_bytes=65536))
        with pytest.raises(LaunchError, match=r"shared_bytes = '65536' evaluates to 65536; dynamic shared "
                                              r"memory must be 0 to 49152 bytes"):
            compile(source, backend="cpu")

    def test_dynamic_shared_memory_over_the_limit_from_dims(self):
        """The same limit applies when shared_bytes is an expression over dims."""
        k = compiled(submission("""
            extern "C" __global__ void k(float* out) {
                extern __shared__ float s[];
                s[threadIdx.x] = 1.0f;
                out[threadIdx.x] = s[threadIdx.x];
            }
        """, launch("k", [1], [32], ["out"], shared_bytes="n * 4")))
        assert k.run({}, {"out": ((32,), "float32")}, {"n": 32}).ok
        with pytest.raises(LaunchError, match=r"shared_bytes = 'n \* 4' evaluates to 65536"):
            k.run({}, {"out": ((32,), "float32")}, {"n": 16384})

    def test_static_shared_memory_over_the_limit(self):
        """`__shared__ float s[20000]` (80 KB) must not run as if a GPU could launch it."""
        source = submission("""
            extern "C" __global__ void k(float* out) {
                __shared__ float s[20000];
                s[threadIdx.x * 100] = threadIdx.x;
                __syncthreads();
                out[threadIdx.x] = s[(199 - threadIdx.x) * 100];
            }
        """, launch("k", [1], [200], ["out"]))
        with pytest.raises(SubmissionError, match=r"static __shared__ arrays take 80000 bytes; a block may use at most 49152"):
            compile(source, backend="cpu")

    def test_unknown_argument_name(self):
        """An args entry naming nothing is a LaunchError with a suggestion and the known names."""
        k = compiled(submission(
            'extern "C" __global__ void k(const float* x, float* out, int n) { out[0] = x[0] + n; }',
            launch("k", [1], [1], ["x", "output", "n"])))
        with pytest.raises(LaunchError, match=r"args\[1\]: arg 'output' of launch 0 names no input, output, "
                                              r"scratch buffer, dim or scalar \(did you mean 'out'\?\)"):
            k.run({"x": X}, OUT, N)

    def test_argument_count_disagrees_with_the_signature(self):
        """Two args for a three-parameter kernel is refused at compile time, showing the signature."""
        source = submission(
            'extern "C" __global__ void k(const float* x, float* out, int n) { out[0] = x[0] + n; }',
            launch("k", [1], [1], ["x", "out"]))
        with pytest.raises(SubmissionError, match=r"kernel 'k' takes 3 parameters but args lists 2: "
                                                  r"k\(const float\* x, float\* out, int n\)"):
            compile(source, backend="cpu")

    def test_value_passed_for_a_pointer(self):
        """A dim bound to a pointer parameter is a LaunchError naming the argument and parameter."""
        k = compiled(submission(
            'extern "C" __global__ void k(const float* x, float* out, int n) { out[0] = x[0] + n; }',
            launch("k", [1], [1], ["n", "out", "n"])))
        with pytest.raises(LaunchError, match=r"args\[0\]: arg 'n' of launch 0 is dim 'n' = 1000 but "
                                              r"parameter 'x' of kernel 'k' is a pointer float\*"):
            k.run({"x": X}, OUT, N)

    def test_buffer_passed_for_a_value(self):
        """A buffer bound to a value parameter is a LaunchError naming both."""
        k = compiled(submission(
            'extern "C" __global__ void k(const float* x, float* out, int n) { out[0] = x[0] + n; }',
            launch("k", [1], [1], ["x", "out", "x"])))
        with pytest.raises(LaunchError, match=r"args\[2\]: arg 'x' of launch 0 is buffer 'x' \(float32\) but "
                                              r"parameter 'n' of kernel 'k' is a value int"):
            k.run({"x": X}, OUT, N)

    def test_element_type_mismatch(self):
        """A float32 input bound to an int* parameter is a LaunchError naming both dtypes."""
        k = compiled(submission(
            'extern "C" __global__ void k(const int* x, float* out, int n) { out[0] = x[0] + n; }',
            launch("k", [1], [1], ["x", "out", "n"])))
        with pytest.raises(LaunchError, match=r"arg 'x' of launch 0 is buffer 'x' \(float32\) but parameter "
                                              r"'x' of kernel 'k' is const int\* \(int32\)"):
            k.run({"x": X}, OUT, N)

    def test_huge_scratch_buffer(self):
        """A scratch size beyond 4 GiB is a LaunchError, before any memory is touched."""
        k = compiled(submission(
            'extern "C" __global__ void k(float* tmp, float* out) { out[0] = 1.0f; }',
            launch("k", [1], [1], ["tmp", "out"]),
            scratches=({"name": "tmp", "dtype": "float32", "size": "n * n"},)))
        with pytest.raises(LaunchError, match=r"scratch 'tmp'.*size = 'n \* n' evaluates to 10000000000 "
                                              r"elements \(40000000000 bytes\)"):
            k.run({}, {"out": ((1,), "float32")}, {"n": 100000})


# ============================================================================ the two sandbox walls

GETPID = kernel_1d("if (i < n) out[i] = (float)getpid();", prelude='extern "C" int getpid(void);\n')


class TestSandboxWalls:
    def test_global_constructor_is_rejected_before_it_runs(self):
        """A static object with a constructor puts code in .init_array: refused when built."""
        source = kernel_1d("if (i < n) out[i] = x[i] + counter;", prelude=textwrap.dedent("""\
            static int counter;
            struct S { S() { counter = 42; } };
            S s;
        """))
        with pytest.raises(SubmissionError, match=r"the kernel's object has a \.init_array section \(code that "
                                                  r"runs when it is loaded\): global constructors"):
            compile(source, backend="cpu")

    def test_member_initialising_constructor_is_rejected(self):
        """`struct S { int v; S() : v(3) {} }; S s;` also needs load-time code: refused."""
        source = kernel_1d("if (i < n) out[i] = x[i] + s.v;",
                           prelude="struct S { int v; S() : v(3) { } };\nS s;\n")
        with pytest.raises(SubmissionError, match=r"\.init_array section"):
            compile(source, backend="cpu")

    def test_empty_constructor_leaves_nothing_to_run(self):
        """`struct S { S() { } }; S s;` compiles to no initialiser at all (g++ drops the empty
        constructor), so there is no load-time code to refuse: it builds and runs normally."""
        k = compiled(kernel_1d("if (i < n) out[i] = x[i];", prelude="struct S { S() { } };\nS s;\n"))
        r = k.run({"x": X}, OUT, N)
        assert r.ok and np.array_equal(r.outputs["out"], X)

    def test_dynamic_initialiser_is_rejected(self):
        """A global initialised from a non-constant expression also runs at load time: refused."""
        source = kernel_1d("if (i < n) out[i] = x[i] + scale;",
                           prelude="__device__ float seed_value(void) { volatile float v = 2.0f; return v; }\n"
                                   "float scale = seed_value();\n")
        with pytest.raises(SubmissionError, match=r"\.init_array section"):
            compile(source, backend="cpu")

    def test_constructor_attribute_is_rejected(self):
        """`__attribute__((constructor))` is the same thing spelled differently: refused."""
        source = kernel_1d("if (i < n) out[i] = x[i] + flag;",
                           prelude="static int flag;\n"
                                   "__attribute__((constructor)) static void early(void) { flag = 1; }\n")
        with pytest.raises(SubmissionError, match=r"\.init_array section|constructor"):
            compile(source, backend="cpu")

    def test_thread_local_is_rejected(self):
        """thread_local storage is refused when the object is checked."""
        source = kernel_1d("if (i < n) { tls = x[i]; out[i] = tls; }", prelude="thread_local float tls = 1.0f;\n")
        with pytest.raises(SubmissionError, match=r"thread-local storage"):
            compile(source, backend="cpu")

    def test_first_wall_refuses_a_libc_call(self):
        """A kernel calling getpid (not in the static word list) is refused by the object check."""
        with pytest.raises(SubmissionError, match=r"the kernel references 'getpid': device code may only call "
                                                  "the CUDA device API and the math library"):
            compile(GETPID, backend="cpu")

    def test_second_wall_kills_a_forbidden_syscall(self, monkeypatch):
        """With the object check bypassed, seccomp kills the child at getpid: forbidden_syscall."""
        monkeypatch.setattr(cpu_backend, "check_kernel_object", lambda path: None)
        k = compile(GETPID, backend="cpu")
        r = k.run({"x": X}, OUT, N)
        assert r.outcome == "forbidden_syscall"
        assert "the sandbox killed the kernel for a forbidden system call" in r.message
        assert r.outputs == {}
        # the parent is fine and a later case in the same batch still runs
        fine = compiled(COPY)
        assert fine.run({"x": X}, OUT, N).ok

    def test_second_wall_holds_inside_a_batch(self, monkeypatch):
        """The killed case is reported, and the cases after it are rerun in a fresh child."""
        monkeypatch.setattr(cpu_backend, "check_kernel_object", lambda path: None)
        k = compile(kernel_1d("if (x[0] > 0.0f && i == 0) out[0] = (float)getpid();\n"
                              "if (i < n && i > 0) out[i] = x[i];\n"
                              "if (i == 0 && x[0] <= 0.0f) out[0] = x[0];",
                              prelude='extern "C" int getpid(void);\n'), backend="cpu")
        calm = RunCase({"x": -np.ones(4, np.float32)}, {"out": ((4,), "float32")}, {"n": 4})
        wild = RunCase({"x": np.ones(4, np.float32)}, {"out": ((4,), "float32")}, {"n": 4})
        outcomes = [r.outcome for r in k.run_batch([calm, wild, calm])]
        assert outcomes == ["ok", "forbidden_syscall", "ok"]

    def test_parent_process_is_untouched(self):
        """After every hostile run above the parent is the same process, still able to compile and run."""
        pid = os.getpid()
        r = compiled(COPY).run({"x": X}, OUT, N)
        assert r.ok and os.getpid() == pid
        np.testing.assert_array_equal(r.outputs["out"], X)
