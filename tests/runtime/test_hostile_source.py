"""The source wall: what a submission's text may contain is decided on what the compilers see.

Each attack here was found by trying the checks as an adversary would: characters and splices
that make our lexer and GCC's disagree, code that only one compiler compiles, host files probed
through the preprocessor, attributes that place bytes where the loader runs them, and parser
inputs that crash instead of failing. Every test goes through the real preprocessor (g++ -E in a
bounded child); the `TestPreprocessedWall` tests call that wall directly, past the raw-text
checks, to show it holds on its own.
"""

from __future__ import annotations

import numpy as np
import pytest

from mutagym.runtime import SubmissionError, compile, parse_submission
from mutagym.runtime.preprocessed import check_preprocessed, emulator_macros, nvrtc_macros
from submission_text import launch, submission

ONE_D = launch("k", ["ceil_div(n, 128)"], [128], ["x", "out", "n"])
KERNEL = ('extern "C" __global__ void k(const float* x, float* out, int n) {\n'
          "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "    if (i < n) out[i] = x[i] * SCALE;\n"
          "}\n")


def with_prelude(prelude: str, body: str = KERNEL) -> str:
    """A launchable submission whose code starts with *prelude* (raw, not dedented)."""
    return submission("#define SCALE 1.0f\n", ONE_D).replace("#define SCALE 1.0f\n", prelude + body)


def refused(text: str, pattern: str, line: int | None = None) -> SubmissionError:
    with pytest.raises(SubmissionError, match=pattern) as info:
        parse_submission(text)
    if line is not None:
        assert info.value.line == line, str(info.value)
    return info.value


def line_of(text: str, needle: str) -> int:
    return next(i for i, row in enumerate(text.splitlines(), 1) if needle in row)


class TestCharactersAndSplices:
    @pytest.mark.parametrize("char, name", [("\f", "form feed"), ("\v", "vertical tab"),
                                            ("\r", "lone carriage return")])
    def test_control_characters_before_a_directive(self, char, name):
        """GCC takes a form feed or vertical tab as white space before `#`, and a lone CR as a line
        end: each would hide a directive from a line-based check. Refused at their line."""
        text = with_prelude(f"int a;{char}#include \"/etc/hostname\"\n#define SCALE 1.0f\n")
        refused(text, r"control character .* is not allowed: form feeds, vertical tabs and lone "
                      r"carriage returns", line=line_of(text, "int a;"))

    def test_backslash_space_newline_splice_smuggles_no_asm(self):
        """GCC joins `\\ <newline>` like `\\<newline>`: `a\\ \\nsm` is `asm`."""
        text = with_prelude("#define SCALE 1.0f\n__device__ void f() { a\\ \nsm(\"nop\"); }\n")
        refused(text, r"inline assembly \('asm'\) is not allowed", line=line_of(text, "__device__ void f"))

    def test_crlf_line_ends_are_fine(self):
        text = with_prelude("#define SCALE 1.0f\n").replace("\n", "\r\n")
        assert parse_submission(text).kernels["k"].name == "k"


class TestTwoCompilersOneKernel:
    def test_code_only_nvrtc_compiles_is_refused(self):
        """`#ifndef __CUDACC_RTC__` lets the gate (NVRTC) and the run (g++) judge different kernels."""
        text = with_prelude("#ifndef __CUDACC_RTC__\n#define SCALE 2.0f\n#else\n#define SCALE 1.0f\n#endif\n")
        refused(text, r"the text tests '__CUDACC_RTC__', which NVRTC and the CPU emulator \(g\+\+\) "
                      r"define differently", line=line_of(text, "#ifndef __CUDACC_RTC__"))

    def test_code_only_gcc_compiles_is_refused(self):
        text = with_prelude("#define SCALE 1.0f\n#ifdef __GNUC__\n__device__ int only_here;\n#endif\n")
        refused(text, r"the text tests '__GNUC__'", line=line_of(text, "#ifdef __GNUC__"))

    @pytest.mark.parametrize("probe", ["#ifdef __x86_64__", "#if defined(__NVCC__)", "#ifdef _MSC_VER",
                                       "#if __has_builtin(__builtin_expect)"])
    def test_other_compiler_probes_are_refused(self, probe):
        """A macro only one compiler defines, a reserved name NVRTC might define, or a feature
        probe NVRTC's front end answers otherwise: each could split the gate from the run."""
        text = with_prelude(f"{probe}\n#define SCALE 2.0f\n#else\n#define SCALE 1.0f\n#endif\n")
        refused(text, r"the text tests|is not allowed in a kernel")

    def test_standard_and_cuda_macros_may_be_tested(self):
        text = with_prelude("#if __cplusplus >= 201703L && defined(__CUDACC__) && __CUDA_ARCH__ >= 700\n"
                            "#define SCALE 1.0f\n#else\n#define SCALE 0.0f\n#endif\n")
        assert parse_submission(text).kernels["k"].name == "k"

    def test_arch_branches_are_the_same_in_both(self):
        """`__CUDA_ARCH__` is the gate's (800) in the emulator too, so the branch NVRTC compiles is
        the branch that runs."""
        assert emulator_macros()["__CUDA_ARCH__"] == nvrtc_macros()["__CUDA_ARCH__"] == "800"
        text = with_prelude("#if __CUDA_ARCH__ >= 700\n#define SCALE ((float)__CUDA_ARCH__)\n"
                            "#else\n#define SCALE 0.0f\n#endif\n")
        x = np.ones(64, np.float32)
        r = compile(text, backend="cpu").run({"x": x}, {"out": ((64,), "float32")}, {"n": 64})
        assert r.ok and np.all(r.outputs["out"] == 800.0)


class TestHostFiles:
    def test_has_include_probe_is_refused(self):
        text = with_prelude('#if __has_include("/etc/passwd")\n#define SCALE 1.0f\n#else\n'
                            "#define SCALE 0.0f\n#endif\n")
        refused(text, r"'__has_include' is not allowed: a kernel cannot probe the host's files",
                line=line_of(text, "__has_include"))

    def test_host_header_is_refused_without_its_contents(self):
        text = with_prelude('#include "/etc/hostname"\n#define SCALE 1.0f\n')
        err = refused(text, r"#include '\"/etc/hostname\"' is not allowed")
        host = open("/etc/hostname").read().strip()
        assert host not in str(err)


class TestAttributes:
    @pytest.mark.parametrize("declaration, name", [
        ('__attribute__((section(".text.payload"))) const unsigned char code[] = {0xc3};', "section"),
        ('__attribute__((aligned(4), ifunc("pick"))) void f();', "ifunc"),
        ("__attribute__((constructor)) void early() {}", "constructor"),
        ("__attribute((destructor)) void late() {}", "destructor"),
        ('void g() {} void h() __attribute__((alias("g")));', "alias"),
        ('__attribute__((target_clones("avx2", "default"))) int t() { return 1; }', "target_clones"),
        ("[[gnu::constructor]] void early() {}", "constructor"),
        ("[[maybe_unused, gnu::__section__(\".init_array\")]] static int s;", "__section__"),
        ("#define PLACE section\n__attribute__((PLACE(\".text\"))) const int c = 1;", "section"),
        ("int q = 1'2; __attribute__((used)) static int u = 3'4;", "used"),
    ])
    def test_attribute_outside_the_allowed_set(self, declaration, name):
        """Attributes that place code or data where the loader runs it are refused on the
        preprocessed tokens, so a macro or a digit separator hides none of them."""
        text = with_prelude(f"#define SCALE 1.0f\n{declaration}\n")
        refused(text, rf"attribute '{name}' is not allowed")

    def test_declspec_is_refused(self):
        refused(with_prelude("#define SCALE 1.0f\n__declspec(dllexport) int d;\n"), r"'__declspec' is not allowed")

    def test_ordinary_attributes_build_and_run(self):
        text = with_prelude("#define SCALE 1.0f\n__attribute__((aligned(16))) __device__ float table[4];\n"
                            "[[maybe_unused]] static __device__ int unused_counter;\n"
                            "__device__ __attribute__((noinline)) float twice(float v) { return 2.0f * v; }\n")
        x = np.arange(32, dtype=np.float32)
        r = compile(text, backend="cpu").run({"x": x}, {"out": ((32,), "float32")}, {"n": 32})
        assert r.ok and np.array_equal(r.outputs["out"], x)


class TestPreprocessedWall:
    """The preprocessed check on its own: texts the raw checks would already refuse."""

    @pytest.mark.parametrize("code, word", [
        ("#define CAT(a, b) a##b\nint CAT(a, sm);", "asm"),
        ('#define CAT(a, b) a##b\nCAT(_Pra, gma)("GCC optimize(0)")', "_Pragma"),
        ('#define CAT(a, b) a##b\n#if CAT(__has_, include)("/etc/passwd")\nint leak;\n#endif', "__has_include"),
        ('__asm__("syscall");', "__asm__"),
    ])
    def test_poisoned_words_however_assembled(self, code, word):
        with pytest.raises(SubmissionError, match=rf"'{word}' is not allowed in a kernel") as info:
            check_preprocessed(code + "\n")
        assert info.value.line is not None

    def test_a_host_file_is_never_reached(self):
        with pytest.raises(SubmissionError, match="a header outside the allowed ones|not one of the "
                                                  "allowed headers") as info:
            check_preprocessed('#include "/etc/hostname"\nint a;\n')
        assert open("/etc/hostname").read().strip() not in str(info.value)
        assert "/etc" not in str(info.value)

    def test_reserved_prefix_however_assembled(self):
        """The emulator's own `__mg_` functions run in the runner before its last filter."""
        with pytest.raises(SubmissionError, match=r"'__mg_context' is not allowed"):
            check_preprocessed('#define CAT(a, b) a##b\nextern "C" int CAT(__mg_, context)() { return 0; }\n')

    def test_pragma_other_than_unroll(self):
        with pytest.raises(SubmissionError, match=r"the only pragmas are"):
            check_preprocessed("#pragma GCC optimize(\"O0\")\nint a;\n")
        check_preprocessed("__device__ void f(float* p) {\n#pragma unroll 4\n"
                           "for (int i = 0; i < 8; i++) p[i] = 0.0f;\n}\n")

    def test_a_preprocessor_bomb_is_bounded(self):
        """Forty doublings expand to 2^40 tokens: the bounded child stops it and names a limit."""
        bomb = "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 41))
        with pytest.raises(SubmissionError, match=r"exceeded its .* limit"):
            check_preprocessed(bomb + "A40\n")


    def test_an_expansion_past_what_is_read_is_refused(self):
        """Code hidden behind megabytes of expansion would escape the comparison: refused whole."""
        wide = "#define B0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n" + "".join(
            f"#define B{i} B{i - 1} B{i - 1}\n" for i in range(1, 19))
        with pytest.raises(SubmissionError, match=r"expands to more than 8 MiB when preprocessed"):
            check_preprocessed(wide + "B18\n")


class TestParsers:
    def test_deeply_nested_toml_array(self):
        """A nested TOML array once raised RecursionError out of every entry point."""
        nested = "[" * 4000 + "]" * 4000
        text = submission(KERNEL.replace("SCALE", "1.0f"), ONE_D).replace(
            '[[launch]]', f"deep = {nested}\n[[launch]]", 1)
        refused(text, r"nests too deeply to be parsed|is not valid TOML")

    def test_oversized_launch_block(self):
        padding = "# " + "x" * 100 + "\n"
        text = submission(KERNEL.replace("SCALE", "1.0f"), ONE_D).replace("[[launch]]", padding * 200 + "[[launch]]", 1)
        refused(text, r"the /\* mutagym \*/ block has \d+ characters; at most 16384 are read", line=1)

    def test_deeply_nested_grid_expression(self):
        grid = "(" * 3000 + "n" + ")" * 3000
        text = submission(KERNEL.replace("SCALE", "1.0f"), launch("k", [grid], [128], ["x", "out", "n"]))
        with pytest.raises(SubmissionError):
            parse_submission(text)



class TestEntryPoints:
    """No exception of a submission's making leaves the reward: a parser crash is a source error."""

    NESTED = submission(KERNEL.replace("SCALE", "1.0f"), ONE_D).replace(
        "[[launch]]", "deep = " + "[" * 4000 + "]" * 4000 + "\n[[launch]]", 1)

    def test_score_and_verl_give_the_source_error_reward(self):
        from mutagym.envs.trainer import score, verl_compute_score
        judgement = score(self.NESTED, "relu", prescreen=False)
        assert judgement.category == "source_error" and judgement.reward == 0.0
        assert "nests too deeply" in judgement.message
        result = verl_compute_score(data_source="mutagym", solution_str=f"```cuda\n{self.NESTED}```",
                                    ground_truth="relu", extra_info={"problem": "relu"}, prescreen=False)
        assert result["category"] == "source_error" and result["score"] == 0.0

    def test_env_step_gives_the_source_error_reward(self):
        import gymnasium as gym

        import mutagym  # noqa: F401 (registers the environments)
        env = gym.make("mutagym/KernelTask-v0", problems="relu", prescreen=False)
        try:
            env.reset(seed=0)
            _, reward, terminated, _, info = env.step(self.NESTED)
            assert reward == 0.0 and terminated and info["category"] == "source_error"
        finally:
            env.close()

    def test_eval_command_reports_a_source_error(self, tmp_path):
        import json
        import subprocess
        import sys
        path = tmp_path / "nested.cu"
        path.write_text(self.NESTED)
        proc = subprocess.run([sys.executable, "-m", "mutagym", "eval", str(path), "--problem", "relu", "--json"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, proc.stderr   # 1: a kernel was rejected (not a crash)
        assert "Traceback" not in proc.stderr
        assert "source_error" in proc.stdout and "nests too deeply" in proc.stdout
        json.loads(proc.stdout)
