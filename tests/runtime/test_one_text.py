"""One text, one meaning: the source checks, NVRTC and the emulator's g++ see the same tokens.

Each submission here is one a hostile policy wrote (issue 30) to make the emulator run something
else than the GPU would, or than the checks read: a macro of the text that reaches code the
emulator generates, a directive that tests or redefines what only the emulator's headers define,
a name only the emulator's C library gives meaning to, and a line of the preprocessor's output the
text forged to skip the checks. The text's directives are now resolved once, by the preprocessing
check, and its output is what both compilers build (`Submission.device_text`); what the runner
calls while it loads an object is compiled apart from any text (csrc/mg_context.cpp).
"""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest

from mutagym.runtime import SubmissionError, compile, parse_submission
from mutagym.runtime.cpu_backend import CpuKernel
from mutagym.runtime.nvrtc_gate import nvrtc_gate
from mutagym.runtime.preprocessed import check_preprocessed
from submission_text import submission
from test_hostile_source import ONE_D, refused

X = np.arange(256, dtype=np.float32)


def kernel(body: str, *, before: str = "", after: str = "") -> str:
    """`k(const float* x, float* out, int n)` over n threads, *body* run where `i < n`."""
    return submission(textwrap.dedent(before) + 'extern "C" __global__ void k(const float* x, float* out, int n) {\n'
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      f"    if (i < n) {{ {body} }}\n}}\n" + textwrap.dedent(after), ONE_D)


def run(source: str, **options) -> np.ndarray:
    r = compile(source, backend="cpu", **options).run({"x": X}, {"out": ((256,), "float32")}, {"n": 256})
    assert r.ok, r.message
    return r.outputs["out"]


# The hook runs only where `return` was rewritten: the payload read host files from there.
TRAILING_RETURN = kernel("out[i] = (float)loaded;", before="""
    __device__ int loaded = 0;
    __device__ int hook() { loaded = 42; return 0; }
""", after="#define return return hook(),\n")


class TestGeneratedCode:
    def test_a_trailing_macro_rewrites_nothing_the_runner_calls(self):
        """`#define return return hook(),` last in the text once rewrote the generated
        `__mg_context()`, which the runner calls while it loads the object (under its looser
        filter): `hook` ran there, and set `loaded`. Now no macro of the text outlives it."""
        assert np.all(run(TRAILING_RETURN) == 0.0)

    def test_load_time_code_is_out_of_the_texts_reach_on_its_own(self):
        """With the one text off (the emulator given the raw text, its macros alive, as before),
        the macro still reaches nothing the runner calls: that is a translation unit of its own."""
        sub = parse_submission(TRAILING_RETURN)
        raw = dataclasses.replace(sub, device_text=f"#line 1\n{sub.source}")
        r = CpuKernel(raw).run_batch([_case()])[0]
        assert r.ok and np.all(r.outputs["out"] == 0.0)

    def test_a_macro_named_like_the_kernel_changes_nothing(self):
        """A macro defined after the kernel could once retarget the generated entry shim (the GPU
        launches `k`, the emulator would have called `wrong`)."""
        text = kernel("out[i] = x[i];", before='extern "C" __global__ void wrong(const float* x, float* out, '
                                               'int n) { out[0] = -1.0f; }\n', after="#define k wrong\n")
        assert np.array_equal(run(text), X)


def _case():
    from mutagym.runtime import RunCase
    return RunCase({"x": X}, {"out": ((256,), "float32")}, {"n": 256})


class TestTheEmulatorsNamesAreInvisible:
    @pytest.mark.parametrize("test", ["#ifdef printf", "#if defined(memcpy)", "#ifdef PATH_MAX",
                                      "#ifdef NAN", "#if defined(assert) && defined(INT32_MAX)"])
    def test_a_directive_sees_what_nvrtc_sees(self, test):
        """`printf`, `memcpy` and `assert` are macros only in the emulator's build, `PATH_MAX` only
        its C library's, `NAN` and `INT32_MAX` the prelude's too: under `#ifdef printf` the GPU
        build was an empty kernel and the emulator's the right one (reward 1.0). Now the text's
        directives are resolved without either compiler's headers, so both build the same branch,
        the one NVRTC compiles."""
        text = kernel(f"\n{test}\n    out[i] = x[i];\n#else\n    out[i] = -x[i];\n#endif\n")
        assert np.array_equal(run(text), -X)
        assert "neg.f32" in nvrtc_gate(text).ptx

    def test_undefining_an_emulator_macro_changes_nothing(self):
        """`#undef printf` once unbound the emulator's printf (the object then called the C
        library's, and was refused); NVRTC's printf is no macro to undefine."""
        text = kernel('if (i == 0) printf("%d", 7); out[i] = x[i];', before="#undef printf\n")
        r = compile(text, backend="cpu").run({"x": X}, {"out": ((256,), "float32")}, {"n": 256})
        assert r.ok and r.stdout == "7"

    def test_a_macro_named_like_a_word_of_an_emulator_macro_changes_nothing(self):
        """`threadIdx` is the emulator's macro for `__mg_ctx.thread_idx`: a text that defined
        `thread_idx` rewrote the emulator's thread index, never NVRTC's."""
        assert np.array_equal(run(kernel("out[i] = x[i];", before="#define thread_idx block_idx\n")), X)

    @pytest.mark.parametrize("name", ["PATH_MAX", "FP_NAN", "offsetof(float2, y)", "INT_FAST8_MAX",
                                      "_GLIBCXX_INCLUDE_NEXT_C_HEADERS", "M_PIf"])
    def test_a_name_only_the_emulators_library_defines_is_refused(self, name):
        """A macro of the emulator's C library would expand here and not under NVRTC (where an
        overload resolution or `decltype` could quietly pick another meaning)."""
        text = kernel(f"out[i] = (float)({name});")
        refused(text, rf"'{name.split('(')[0]}' is a macro only the CPU emulator's headers define",
                line=text.splitlines().index(next(l for l in text.splitlines() if name in l)) + 1)

    def test_the_emulators_cuda_macros_and_the_shared_constants_may_be_named(self):
        """What CUDA defines (`threadIdx`, `__shared__`, `CUDART_INF_F`) and what NVRTC's prelude
        defines alike (`INT32_MAX`, `M_PI`, `FLT_MAX`, `NULL`) build on both compilers."""
        text = kernel("const float* p = NULL; out[i] = (p == NULL && INT32_MAX > 0 && x[i] < FLT_MAX "
                      "&& CUDART_INF_F > 0.0f) ? x[i] * (float)(M_PI / M_PI) : 0.0f;")
        assert np.array_equal(run(text), X)
        assert ".entry k(" in nvrtc_gate(text).ptx


class TestLinesOfThePreprocessedOutput:
    """What the checks read of g++ -E's output is what the compilers read, and every line the
    text produced is checked: the preprocessed wall on its own (`check_preprocessed`)."""

    SECTION = '__attribute__((section(".text.payload"))) const unsigned char code[] = {0xc3};\n'

    @pytest.mark.parametrize("forgery", [
        'const char* s = R"(\n# 1 "include/cuda_fp16.h"\n)";\n',
        'const char* s = R""(\n# 1 "include/cuda_fp16.h"\n)"";\n',
        '#line 1 "include/cuda_fp16.h"\n',
        '#\\\nline 1 "include/cuda_fp16.h"\n',
        '# 1 "include/cuda_fp16.h" 1\n',
        '#define H #\nH 1 "include/cuda_fp16.h"\n',
        '#define H %:\nH 1 "include/cuda_fp16.h"\n',
    ], ids=["raw-string", "raw-string-quote-delimiter", "line", "spliced-line", "gnu-marker",
            "macro-hash", "macro-digraph"])
    def test_a_forged_line_marker_hides_nothing(self, forgery):
        """A line of the output that looks like g++'s marker for a stub once made every later
        line "the stub's", unchecked: the `section` attribute below (or the issue's
        `no_sanitize_thread`) went through. Each forgery is refused, or the line is checked."""
        with pytest.raises(SubmissionError, match=r"raw string literal may not span lines|renames its lines|"
                                                  r"at the start of a line|attribute 'section' is not allowed"):
            check_preprocessed(forgery + self.SECTION)

    def test_a_raw_string_on_one_line_is_a_string(self):
        device = check_preprocessed('const char* s = R"(# 1 "include/cuda_fp16.h")";\nint a;\n')
        assert 'R"(# 1 "include/cuda_fp16.h")"' in device

    def test_a_stray_backslash_is_refused(self):
        """At the end of an output line it would splice the next line onto it for the compilers
        (`as\\` + `m` is `asm`)."""
        with pytest.raises(SubmissionError, match="a stray backslash"):
            check_preprocessed("#define ID(x) x\nint a = 1 ID(\\)\n;\n")

    def test_the_files_entered_come_from_the_preprocessors_own_list(self):
        """Which headers were read is the preprocessor's dependency list, not its line markers:
        the device text names the CUDA headers the text included, once each, in order."""
        device = check_preprocessed('#include <cuda_bf16.h>\n#include "cuda_fp16.h"\n#include <stdint.h>\n'
                                    "#include <cuda_bf16.h>\nint a;\n")
        assert device.startswith("#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#line")

    def test_pragma_unroll_arguments_are_expanded(self):
        """The compilers read the pragma after the text's macros are gone: its argument is expanded
        like code, and a pragma inside a macro's arguments is refused."""
        device = check_preprocessed("#define U 4\n__device__ void f(float* p) {\n#pragma unroll U\n"
                                    "for (int i = 0; i < 8; i++) p[i] = 0.0f;\n}\n")
        assert "\n#pragma unroll 4\n" in device
        with pytest.raises(SubmissionError, match="must stand on a line of its own"):
            check_preprocessed("#define ID(x) x\nint a = ID(1\n#pragma unroll\n);\n")
