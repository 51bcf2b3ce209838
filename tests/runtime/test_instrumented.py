"""Instrumentation cannot be opted out of: every function of the race-checked build is instrumented.

The race detector sees memory only through the calls g++'s thread-sanitizer pass puts before each
access (`mutagym.runtime.races`). The issue's policy turned it off for its kernel with
`__attribute__((no_sanitize_thread))` behind a forged line marker, and a kernel that loses updates
on any GPU was paid. Two walls now stand, each tested here on its own: the source checks refuse
every attribute and pragma that changes how the build is instrumented or compiled (on the
preprocessed tokens), and the built object is read back (`instrumented.check_instrumented`): a
function that touches memory without calling the instrumentation is refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import mutagym.runtime.preprocessed as preprocessed
from mutagym.runtime import SubmissionError, compile, parse_submission
from mutagym.runtime.instrumented import check_instrumented
from mutagym.runtime.preprocessed import check_preprocessed
from mutagym.runtime.toolchain import build_kernel
from mutagym.runtime.translate import translation_unit
from mutagym.substrates import list_problems, load_problem
from submission_text import submission
from test_elf_wall import unit
from test_hostile_source import ONE_D

X = np.arange(256, dtype=np.float32)
UNSEEN = r"reads or writes memory without the race detector's instrumentation"


def racing(attribute: str, note: str = "") -> str:
    """Every thread adds into out[0] with a plain `+=` (a GPU loses updates), under *attribute*."""
    return submission(f"{note}extern \"C\" __global__ {attribute} void k(const float* x, float* out, int n) {{\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    if (i == 0) out[0] = 0.0f;\n"
                      "    if (i < n) out[0] += x[i];\n}\n", ONE_D)


def test_the_issues_kernel_is_refused():
    """The issue's submission: a raw string forging g++'s marker for a stub, so the attribute's
    line went unchecked, and the race detector off for the kernel (it ran clean, reward 1.0)."""
    text = racing("__attribute__((no_sanitize_thread))",
                  note='const char* s = R"(\n# 1 "include/cuda_fp16.h"\n)";\n')
    with pytest.raises(SubmissionError):
        compile(text, backend="cpu")


def test_the_same_kernel_without_the_attribute_is_a_data_race():
    r = compile(racing(""), backend="cpu").run({"x": X}, {"out": ((256,), "float32")}, {"n": 256})
    assert r.outcome == "data_race"


class TestTheSourceRefusesOptOuts:
    """Every spelling that turns the instrumentation off or changes how a function is compiled,
    refused on the preprocessed tokens (so no macro or splice hides one)."""

    @pytest.mark.parametrize("declaration", [
        "__attribute__((no_sanitize_thread)) void f(int* p) { *p = 1; }",
        '__attribute__((__no_sanitize__("thread"))) void f(int* p) { *p = 1; }',
        "[[gnu::no_sanitize_thread]] void f(int* p) { *p = 1; }",
        '[[gnu::no_sanitize("thread")]] void f(int* p) { *p = 1; }',
        "[[using gnu: no_sanitize_thread]] void f(int* p) { *p = 1; }",
        "<:<:gnu::no_sanitize_thread:>:> void f(int* p) { *p = 1; }",
        '__attribute__((optimize("O0"))) void f(int* p) { *p = 1; }',
        '__attribute__((target("arch=x86-64"))) void f(int* p) { *p = 1; }',
        "__attribute__((naked)) void f(int* p) { }",
        "__attribute__((no_instrument_function)) void f(int* p) { *p = 1; }",
        "#define OFF __attribute__((no_sanitize_thread))\nOFF void f(int* p) { *p = 1; }",
        '#define OFF [[gnu::optimize("O0")]]\nOFF void f(int* p) { *p = 1; }',
    ])
    def test_an_attribute(self, declaration):
        with pytest.raises(SubmissionError, match=r"attribute '[\w:]+' is not allowed"):
            check_preprocessed(declaration + "\n")

    @pytest.mark.parametrize("pragma", ['#pragma GCC optimize("O0")', "#pragma GCC push_options",
                                        '#pragma GCC target("avx2")', "#pragma clang attribute pop",
                                        '#define P _Pragma("GCC optimize(\\"O0\\")")\nP'])
    def test_a_pragma(self, pragma):
        with pytest.raises(SubmissionError, match=r"the only pragmas are|'_Pragma' is not allowed"):
            check_preprocessed(pragma + "\nvoid f(int* p) { *p = 1; }\n")


class TestTheObjectIsChecked:
    """The object check on its own: the source wall's attribute check is off in these tests."""

    @pytest.mark.parametrize("attribute", ["__attribute__((no_sanitize_thread))",
                                           '__attribute__((no_sanitize("thread")))'])
    def test_an_uninstrumented_kernel_is_refused(self, attribute, monkeypatch):
        """With the attribute let through, the kernel compiled and ran without a race (today's
        code); now its object is refused, naming the function."""
        monkeypatch.setattr(preprocessed, "_check_tokens", lambda *view: None)
        with pytest.raises(SubmissionError, match=rf"function 'k' {UNSEEN}"):
            compile(racing(attribute, note="// the attribute wall is off\n"), backend="cpu")

    def test_the_plain_build_of_a_normal_kernel_is_refused(self):
        """The check tells the two builds of one text apart: the plain one is not instrumented."""
        sub = parse_submission(racing(""))
        check_instrumented(build_kernel(translation_unit(sub), race_check=True))
        with pytest.raises(SubmissionError, match=rf"function 'k' {UNSEEN}"):
            check_instrumented(build_kernel(translation_unit(sub), race_check=False))

    def test_a_copy_left_to_the_c_library_counts_as_an_access(self):
        """g++ leaves a copy of run-time size to the C library's memcpy, unseen by the detector
        (the emulator's own `memcpy` reports its bytes first): a function that does only that is
        refused too."""
        path = build_kernel(unit('extern "C" __attribute__((visibility("default"))) void copy(char* d, const char* s, '
                                 "unsigned long n) { __builtin_memcpy(d, s, n); }\n"), race_check=True)
        with pytest.raises(SubmissionError, match=rf"function 'copy' {UNSEEN} \(its first access: 'jmp memcpy'\)"):
            check_instrumented(path)

    def test_an_object_defining_an_entry_point_of_the_instrumentation(self):
        """Calls to `__tsan_write4` could bind to the object's own, which reports nothing."""
        path = build_kernel(unit('extern "C" __attribute__((visibility("default"))) void __tsan_write4(void*) {}\n'),
                            race_check=True)
        with pytest.raises(SubmissionError, match=r"defines '__tsan_write4', a name of the race detector's"):
            check_instrumented(path)

    def test_stack_and_constant_data_need_no_instrumentation(self):
        """A function that only reads a constant table (a jump table, too) and its own stack is fine."""
        text = submission("""
            __device__ __noinline__ float pick(int op, float a) {
                switch (op & 7) { case 0: return a; case 1: return -a; case 2: return a * a; case 3: return a + 1;
                                  case 4: return a - 1; case 5: return 2 * a; case 6: return a / 2; default: return 0; }
            }
            __constant__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            extern "C" __global__ void k(const float* x, float* out, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                float local[8];
                for (int j = 0; j < 8; j++) local[j] = pick(j + i, table[j & 3]);
                if (i < n) out[i] = local[i & 7] + x[i];
            }
        """, ONE_D)
        check_instrumented(build_kernel(translation_unit(parse_submission(text)), race_check=True))


CATALOG = [(pid, name) for pid in list_problems() for name in load_problem(pid).kernel_sources()]


@pytest.mark.parametrize("pid,name", CATALOG, ids=[f"{p}-{n}" for p, n in CATALOG])
def test_every_catalog_kernel(pid, name):
    """Every substrate and variant: its race-checked object passes, its plain object would not
    (the check refuses nothing a normal build makes, and sees a kernel built uninstrumented)."""
    sub = parse_submission(load_problem(pid).kernel_sources()[name])
    check_instrumented(build_kernel(translation_unit(sub), race_check=True))
    with pytest.raises(SubmissionError, match=UNSEEN):
        check_instrumented(build_kernel(translation_unit(sub), race_check=False))
