"""Tests for `mutagym.runtime.submission` and `mutagym.runtime.expressions`: every refusal pins
its wording and the line it names; good submissions pin what the parser extracts."""

from __future__ import annotations

import pickle
import random
import re

import pytest

from mutagym.runtime.errors import LaunchError, SubmissionError
from mutagym.runtime.expressions import parse_expression
from mutagym.runtime.headers import ALLOWED_HEADERS
from mutagym.runtime.submission import (
    MAX_SUBMISSION_BYTES,
    Param,
    parse_submission,
    strip_comments_and_strings,
)

LAYERNORM = '''/* mutagym
[[launch]]
kernel = "layernorm_rows"
grid = ["rows"]
block = [256]
shared_bytes = 0                   # dynamic shared memory; an expression is allowed
args = ["x", "weight", "bias", "out", "rows", "cols", "eps"]
*/
extern "C" __global__ void layernorm_rows(const float* x, const float* weight, const float* bias,
                                          float* out, int rows, int cols, float eps) {
    __shared__ float partial[256];
    const int row = blockIdx.x;
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += x[row * cols + c];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    const float mean = partial[0] / cols;
    __syncthreads();
    float var = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = x[row * cols + c] - mean;
        var += d * d;
    }
    partial[threadIdx.x] = var;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = rsqrtf(partial[0] / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[row * cols + c] = (x[row * cols + c] - mean) * inv * weight[c] + bias[c];
}
'''

RELU_TOML = '''[[launch]]
kernel = "relu"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]'''

RELU_CODE = '''extern "C" __global__ void relu(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


def submission(toml: str = RELU_TOML, code: str = RELU_CODE) -> str:
    """A submission text: the launch block, then the code."""
    return f"/* mutagym\n{toml}\n*/\n{code}"


def insert(statement: str) -> str:
    """RELU_CODE with *statement* on its own line (line 10 of a `submission`) before the `if`."""
    return RELU_CODE.replace("    if (i < n)", f"    {statement}\n    if (i < n)")


def line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of *needle* in *text*."""
    return text[:text.index(needle)].count("\n") + 1


def refused(source: str | bytes, match: str, error: type = SubmissionError) -> SubmissionError:
    """Parse *source*, expecting *error* whose message matches *match*; return the error."""
    with pytest.raises(error, match=match) as info:
        parse_submission(source)
    return info.value


# --------------------------------------------------------------------------------------------

class TestGoodSubmissions:
    def test_layernorm_from_design(self):
        """The LayerNorm kernel (the design's example) parses into one launch and its full signature."""
        sub = parse_submission(LAYERNORM)
        kernel = sub.kernels["layernorm_rows"]
        assert str(kernel) == ("layernorm_rows(const float* x, const float* weight, const float* "
                               "bias, float* out, int rows, int cols, float eps)")
        assert kernel.line == 9
        assert kernel.params[0] == Param("x", "float", "float32", pointer=True, const=True)
        assert kernel.params[3] == Param("out", "float", "float32", pointer=True, const=False)
        assert kernel.params[6] == Param("eps", "float", "float32", pointer=False, const=False)
        (launch,) = sub.launches
        assert (launch.index, launch.kernel, launch.line) == (0, "layernorm_rows", 2)
        assert [e.text for e in launch.grid] == ["rows"]
        assert [e.text for e in launch.block] == ["256"]
        assert launch.shared_bytes.evaluate({}) == 0
        assert launch.args == ("x", "weight", "bias", "out", "rows", "cols", "eps")
        assert sub.uses_barriers and sub.scratch == () and sub.includes == ()
        assert len(sub.sha256) == 64 and sub.source == LAYERNORM

    def test_two_launches_with_scratch(self):
        """Two [[launch]] tables and a [[scratch]] table, with expressions over dims."""
        toml = '''[[launch]]
kernel = "partial_sums"
grid = ["min(rows, 65535)", "(cols + 255) // 256"]
block = [256]
shared_bytes = "256 * 4"
args = ["x", "partial", "rows", "cols"]

[[launch]]
kernel = "finish"
grid = ["ceil_div(rows, 128)"]
block = ["128"]
args = ["partial", "out", "rows"]

[[scratch]]
name = "partial"
dtype = "float32"
size = "rows * 8"
init = "zero"'''
        code = '''extern "C" __global__ void partial_sums(const float* x, float* partial, int rows,
                                                 int cols) {}
extern "C" __global__ void finish(const float* partial, float* out, int rows) {}
'''
        sub = parse_submission(submission(toml, code))
        first, second = sub.launches
        assert [e.evaluate({"rows": 70000, "cols": 1000}) for e in first.grid] == [65535, 4]
        assert first.shared_bytes.evaluate({}) == 1024
        assert second.grid[0].evaluate({"rows": 129}) == 2 and second.line == 9
        (scratch,) = sub.scratch
        assert (scratch.name, scratch.dtype, scratch.init) == ("partial", "float32", "zero")
        assert scratch.size.evaluate({"rows": 3}) == 24 and scratch.line == 15
        assert not sub.uses_barriers

    def test_scratch_init_defaults_to_poison(self):
        toml = RELU_TOML + '\n[[scratch]]\nname = "tmp"\ndtype = "int32"\nsize = 4'
        assert parse_submission(submission(toml)).scratch[0].init == "poison"

    def test_bytes_input_equals_str_input(self):
        """UTF-8 bytes parse to the same submission as the decoded text."""
        text = submission(code=RELU_CODE + "// café\n")
        assert parse_submission(text.encode("utf-8")).sha256 == parse_submission(text).sha256

    def test_cached_by_text(self):
        """The same text returns the same (immutable) parse."""
        text = submission()
        assert parse_submission(text) is parse_submission(text)

    def test_submission_pickles(self):
        """Submissions travel to Ray workers."""
        sub = parse_submission(LAYERNORM)
        assert pickle.loads(pickle.dumps(sub)) == sub

    def test_allowed_headers(self):
        """The six allowed headers, in angle or quote form, are recorded once each."""
        code = ('#include <cuda_fp16.h>\n#include "cuda_bf16.h"\n#include <stdint.h>\n'
                '#include <math.h>\n# include <cstdint>\n#include <cmath>\n#include <cmath>\n')
        sub = parse_submission(submission(code=code + RELU_CODE))
        assert sub.includes == ("cuda_fp16.h", "cuda_bf16.h", "stdint.h", "math.h", "cstdint",
                                "cmath")

    def test_refused_words_inside_comments_strings_and_members_are_fine(self):
        """Comments, string literals, member calls and look-alike names do not trip the checks."""
        code = RELU_CODE + '''// system("rm -rf /"); asm("trap;"); #include </etc/passwd>
/* fork(); malloc(4); k<<<1, 1>>>(); */
struct Ops { int (*read)(int); };
__device__ int helper(Ops ops, Ops* p, int write) {
    int read = ops.read(1) + p->read(2);
    int free_slots = 0, opened = 0, mainly = 0;
    printf("system(\\"ls\\") main() open(x) asm %d\\n", read);
    return read + write + free_slots + opened + mainly;
}
'''
        parse_submission(submission(code=code))

    def test_pragma_unroll_is_allowed(self):
        code = RELU_CODE.replace("    int i",
                                 "    #pragma unroll 4\n    #pragma nounroll\n    int i")
        parse_submission(submission(code=code))


class TestTextChecks:
    def test_empty(self):
        refused("", r"^submission: text is empty \(''\)$")

    def test_whitespace_only(self):
        refused(" \n\t\n", r"text is empty \(' \\n\\t\\n'\)")

    def test_one_megabyte_of_random_bytes(self):
        """A megabyte of noise fails cleanly on its size, before any decoding."""
        noise = random.Random(0).randbytes(1 << 20)
        refused(noise, rf"^submission: text is 1048576 bytes; at most {MAX_SUBMISSION_BYTES} "
                       r"\(256 KiB\) are accepted$")

    def test_random_bytes_are_not_utf8(self):
        err = refused(random.Random(0).randbytes(4096),
                      r"^line \d+: text is not UTF-8: byte 0x[0-9a-f]{2} at offset \d+ cannot be "
                      r"decoded")
        assert err.line >= 1

    def test_too_large_text(self):
        refused(submission() + "// " + "x" * MAX_SUBMISSION_BYTES, r"at most 262144")

    def test_nul_character(self):
        err = refused(submission() + "int a;\0\n",
                      r"^line 12: text contains a NUL character \('\\x00'\)$")
        assert err.line == 12

    def test_lone_surrogate(self):
        refused(submission() + "// \ud800\n", r"^line 12: text is not valid Unicode: "
                                               r"'\\ud800' at offset \d+ is a lone surrogate")

    def test_not_text(self):
        refused(12, r"a submission is a str or bytes, got int")


class TestLaunchBlock:
    def test_missing_block(self):
        refused(RELU_CODE, r"^line 1: no /\* mutagym \.\.\. \*/ block found")

    def test_block_needs_the_word_mutagym_first(self):
        refused(submission().replace("/* mutagym", "/* mutagymx"), r"no /\* mutagym")

    def test_block_inside_line_comment_is_not_a_block(self):
        refused("// /* mutagym\n" + RELU_CODE, r"no /\* mutagym")

    def test_second_block(self):
        text = submission() + "/* mutagym\n[[launch]]\n*/\n"
        refused(text, r"^line 12: a second /\* mutagym \*/ block \(the first is at line 1\)")

    def test_toml_syntax_error_names_the_submission_line(self):
        """tomllib's line inside the block is shifted to the submission's line."""
        text = submission(RELU_TOML.replace("block = [256]", "block == [256]"))
        err = refused(text, r"^line 5: the /\* mutagym \*/ block is not valid TOML: ")
        assert err.line == line_of(text, "block ==")

    def test_toml_error_after_leading_code(self):
        text = "// a header comment\n\n" + submission(RELU_TOML.replace('kernel = "relu"',
                                                                        'kernel = relu'))
        err = refused(text, r"not valid TOML: Invalid value \(column 10\)")
        assert err.line == line_of(text, "kernel = relu") == 5

    def test_toml_error_on_the_opening_line_counts_the_prefix(self):
        err = refused("/* mutagym x =\n*/\n" + RELU_CODE, r"not valid TOML: .*\(column 15\)")
        assert err.line == 1

    def test_toml_error_at_end_of_block(self):
        text = submission(RELU_TOML.replace('"relu"', '"""relu'))
        refused(text, r"^line 7: the /\* mutagym \*/ block is not valid TOML: Unterminated string "
                      r"\(at the end of the block\)$")

    def test_unknown_top_level_key(self):
        text = submission('lanch = 1\n' + RELU_TOML)
        refused(text, r"^line 2, mutagym block: unknown key 'lanch' \(did you mean 'launch'\?\); "
                      r"allowed keys: 'launch', 'scratch', 'inout', 'constant'$")

    def test_no_launch(self):
        refused(submission('[[scratch]]\nname = "a"\ndtype = "int8"\nsize = 1'),
                r"^line 1, mutagym block: missing key 'launch' \(required: 'launch'\)$")

    def test_launch_is_not_an_array_of_tables(self):
        refused(submission(RELU_TOML.replace("[[launch]]", "[launch]")),
                r"^line 2, mutagym block: 'launch' must be an array of tables \(\[\[launch\]\]\)")

    def test_empty_launch_array(self):
        refused(submission("launch = []"), r"^line 2, mutagym block: 'launch' is empty")

    def test_unknown_launch_key(self):
        text = submission(RELU_TOML.replace("grid =", "grd ="))
        err = refused(text, r"^line 4, launch 0: unknown key 'grd' \(did you mean 'grid'\?\); "
                            r"allowed keys: 'kernel', 'grid', 'block', 'shared_bytes', 'args', "
                            r"'fill'$")
        assert err.where == "launch 0"

    def test_missing_launch_key(self):
        text = submission(RELU_TOML.replace('kernel = "relu"\n', ""))
        refused(text, r"^line 2, launch 0: missing key 'kernel' \(required: 'kernel', 'grid', "
                      r"'block', 'args'\)$")

    def test_kernel_not_a_string(self):
        refused(submission(RELU_TOML.replace('"relu"', "3")),
                r"^line 3, launch 0: 'kernel' must be a string, got 3$")

    @pytest.mark.parametrize("value", ["[]", "[1, 1, 1, 1]", '"n"'])
    def test_grid_not_one_to_three_expressions(self, value):
        refused(submission(RELU_TOML.replace('["ceil_div(n, 256)"]', value)),
                r"^line 4, launch 0: 'grid' must be a list of 1 to 3 expressions, got ")

    @pytest.mark.parametrize("value, shown", [("1.5", "1.5 (float)"), ("true", "True (bool)")])
    def test_block_entry_not_an_expression(self, value, shown):
        refused(submission(RELU_TOML.replace("[256]", f"[{value}]")),
                r"^line 5, launch 0 block\[0\]: expected an integer expression \(a string or "
                rf"an int\), got {re.escape(shown)}$")

    def test_expression_syntax_error_names_line_and_entry(self):
        refused(submission(RELU_TOML.replace("ceil_div(n, 256)", "n / 256")),
                r"^line 4, launch 0 grid\[0\]: cannot parse 'n / 256' at column 3: '/' is not an "
                r"operator; use '//' for floor division$")

    def test_args_not_a_list(self):
        refused(submission(RELU_TOML.replace('["x", "out", "n"]', '"x"')),
                r"^line 6, launch 0: 'args' must be a list, got 'x'$")

    @pytest.mark.parametrize("entry, message", [
        ("true", r"True is not an argument; args name inputs, outputs, scratch buffers, dims and "
                 r"scalars, or are NULL, 'buffer \+ elements' or an integer expression$"),
        ("1.5", r"1.5 is not an argument"),
        ('""', r"cannot parse '': expression is empty"),
        ('"x +"', r"cannot parse 'x \+'"),
    ])
    def test_args_entry_not_an_argument(self, entry, message):
        refused(submission(RELU_TOML.replace('"n"]', f"{entry}]")),
                rf"^line 6, launch 0 args\[2\]: {message}")

    def test_scratch_unknown_key(self):
        toml = RELU_TOML + '\n[[scratch]]\nname = "t"\ndtype = "int8"\nsize = 1\nsise = 2'
        refused(submission(toml), r"^line 11, scratch 0: unknown key 'sise' \(did you mean "
                                  r"'size'\?\); allowed keys: 'name', 'dtype', 'size', 'init'$")

    def test_scratch_bad_dtype(self):
        toml = RELU_TOML + '\n[[scratch]]\nname = "t"\ndtype = "complex64"\nsize = 1'
        refused(submission(toml), r"^line 9, scratch 0: 'dtype' = 'complex64' is not supported; "
                                  r"choose one of float32, float64, float16, bfloat16")

    def test_scratch_bad_init(self):
        toml = RELU_TOML + '\n[[scratch]]\nname = "t"\ndtype = "int8"\nsize = 1\ninit = "nan"'
        refused(submission(toml),
                r"^line 11, scratch 0: 'init' = 'nan' must be 'poison' or 'zero'$")

    def test_scratch_bad_name(self):
        toml = RELU_TOML + '\n[[scratch]]\nname = "a b"\ndtype = "int8"\nsize = 1'
        refused(submission(toml), r"^line 8, scratch 0: 'name' must be an identifier, got 'a b'$")

    def test_scratch_missing_size(self):
        toml = RELU_TOML + '\n[[scratch]]\nname = "t"\ndtype = "int8"'
        refused(submission(toml), r"^line 7, scratch 0: missing key 'size'")

    def test_scratch_declared_twice(self):
        table = '\n[[scratch]]\nname = "t"\ndtype = "int8"\nsize = 1'
        refused(submission(RELU_TOML + table + table),
                r"^line 11, scratch: scratch buffer 't' is declared twice \(lines 7 and 11\)$")


class TestStaticChecks:
    @pytest.mark.parametrize("directive", ['#include "/etc/passwd"', "#include </etc/passwd>",
                                           '#include "cublas_v2.h"', "#include <stdlib.h>",
                                           '%:include "/etc/passwd"', "#include < cmath >",
                                           "#define H </etc/passwd>\n#include H"])
    def test_include_outside_the_allowlist(self, directive):
        text = submission(code=directive + "\n" + RELU_CODE)
        err = refused(text, r"#include .* is not allowed; allowed headers: "
                            + re.escape(", ".join(ALLOWED_HEADERS)) + "$")
        assert err.line == line_of(text, "include")

    def test_include_etc_passwd_message(self):
        refused(submission(code='#include "/etc/passwd"\n' + RELU_CODE),
                r"""^line 8: #include '"/etc/passwd"' is not allowed""")

    @pytest.mark.parametrize("statement", ['asm("trap;");', '__asm__ volatile("exit;");',
                                           '__asm("nop");', 'as\\\nm("trap;");'])
    def test_inline_asm(self, statement):
        text = submission(code=insert(statement))
        err = refused(text, r"^line 10: inline assembly \('(asm|__asm__|__asm)'\) is not allowed$")
        assert err.line == 10

    @pytest.mark.parametrize("call, name", [
        ('system("ls");', "system"), ("fork();", "fork"), ("vfork();", "vfork"),
        ('execve("/bin/sh", 0, 0);', "execve"), ('execl("/bin/sh", 0);', "execl"),
        ('popen("ls", "r");', "popen"), ('int fd = open("/etc/passwd", 0);', "open"),
        ('openat(0, "x", 0);', "openat"), ('fopen("/etc/passwd", "r");', "fopen"),
        ("read(0, out, 4);", "read"), ("write(1, x, 4);", "write"),
        ("mmap(0, 4096, 7, 34, -1, 0);", "mmap"), ("munmap(out, 4);", "munmap"),
        ("mprotect(out, 4, 7);", "mprotect"), ("syscall(60, 0);", "syscall"),
        ("socket(2, 1, 0);", "socket"), ("connect(3, 0, 0);", "connect"),
        ("kill(1, 9);", "kill"), ("signal(11, 0);", "signal"),
        ('dlopen("libc.so.6", 2);', "dlopen"),
        ('dlsym(0, "system");', "dlsym"), ("auto f = &system;", "system"),
        ('std::system("ls");', "system"), ('::system("ls");', "system"),
    ])
    def test_host_os_calls(self, call, name):
        text = submission(code=insert(call))
        refused(text, rf"^line 10: '{name}' is a host/OS call; kernel code may only compute on "
                      r"its buffers$")

    @pytest.mark.parametrize("declaration", ["extern int system(const char*);",
                                             "__device__ int read(int i) { return i; }"])
    def test_os_call_declarations(self, declaration):
        text = submission(code=declaration + "\n" + RELU_CODE)
        refused(text, r"^line 8: '(system|read)' is a host/OS call")

    @pytest.mark.parametrize("statement, name", [
        ("float* p = (float*)malloc(16);", "malloc"), ("void* p = calloc(4, 4);", "calloc"),
        ("void* p = realloc(0, 4);", "realloc"), ("free(out);", "free"),
        ("float* p = new float[4];", "new"), ("delete out;", "delete"),
    ])
    def test_device_heap(self, statement, name):
        text = submission(code=insert(statement))
        refused(text, rf"^line 10: '{name}' allocates on the device heap, which mutagym does not "
                      r"support; declare a \[\[scratch\]\] buffer instead$")

    @pytest.mark.parametrize("call, name", [("cudaMalloc(&p, 4);", "cudaMalloc"),
                                            ("cudaDeviceSynchronize();", "cudaDeviceSynchronize"),
                                            ("cudaMemcpy (out, x, 4, 1);", "cudaMemcpy")])
    def test_cuda_host_api(self, call, name):
        text = submission(code=insert(call))
        refused(text, rf"^line 10: '{name}' is a CUDA host API call")

    def test_launch_syntax(self):
        text = submission(code=RELU_CODE + "void go() { relu<<<1, 1>>>(0, 0, 0); }\n")
        refused(text, r"^line 12: launch syntax '<<<' is not allowed; declare launches as "
                      r"\[\[launch\]\] tables")

    def test_main(self):
        refused(submission(code=RELU_CODE + "int main() { return 0; }\n"),
                r"^line 12: 'main' is host code; a submission holds device code only$")

    def test_reserved_prefix(self):
        refused(submission(code=RELU_CODE + "__device__ int __mg_ctx;\n"),
                r"^line 12: identifier '__mg_ctx' is not allowed: the '__mg_' prefix is reserved")

    @pytest.mark.parametrize("directive, name", [("#define __syncthreads()", "__syncthreads"),
                                                 ("#define __syncwarp(m)", "__syncwarp"),
                                                 ("#undef threadIdx", "threadIdx"),
                                                 ("#define __shfl_down_sync(m, v, d) v",
                                                  "__shfl_down_sync")])
    def test_redefining_builtins(self, directive, name):
        refused(submission(code=directive + "\n" + RELU_CODE),
                rf"^line 8: #(define|undef) of '{name}' is not allowed: CUDA built-ins must keep "
                r"their meaning$")

    @pytest.mark.parametrize("pragma", ["#pragma omp parallel for", "#pragma GCC optimize(\"O0\")",
                                        "#pragma once", "#pragma"])
    def test_other_pragmas(self, pragma):
        refused(submission(code=pragma + "\n" + RELU_CODE),
                r"^line 8: #pragma .* is not allowed; the only pragmas are '#pragma unroll' and "
                r"'#pragma nounroll'$")

    def test_pragma_operator(self):
        refused(submission(code='_Pragma("GCC optimize(0)")\n' + RELU_CODE),
                r"^line 8: '_Pragma' is not allowed")

    def test_token_pasting(self):
        refused(submission(code="#define CAT(a, b) a##b\n" + RELU_CODE),
                r"^line 8: token pasting \('##'\) is not allowed")

    @pytest.mark.parametrize("directive", ["#import <x>", "#include_next <cmath>", "#line 1",
                                           "#embed </etc/passwd>"])
    def test_other_directives(self, directive):
        refused(submission(code=directive + "\n" + RELU_CODE),
                r"^line 8: preprocessor directive '#\w+' is not allowed; allowed: #define, ")

    def test_unterminated_comment(self):
        refused(submission(code=RELU_CODE + "/* never closed\n"),
                r"^line 12: unterminated /\* comment$")

    def test_unterminated_raw_string(self):
        refused(submission(code=RELU_CODE + 'const char* s = R"(never closed\n'),
                r"^line 12: unterminated raw string literal$")

    def test_first_problem_is_reported(self):
        """Several problems: the earliest in the text wins, whatever its kind."""
        code = insert('fork();\n    asm("");')
        refused(submission(code=code), r"^line 10: 'fork'")


class TestKernelSignatures:
    @pytest.mark.parametrize("declared, ctype, dtype, width", [
        ("float", "float", "float32", 1), ("double", "double", "float64", 1),
        ("__half", "__half", "float16", 1), ("half", "half", "float16", 1),
        ("__nv_bfloat16", "__nv_bfloat16", "bfloat16", 1),
        ("nv_bfloat16", "nv_bfloat16", "bfloat16", 1),
        ("int", "int", "int32", 1), ("signed", "int", "int32", 1),
        ("int32_t", "int32_t", "int32", 1),
        ("signed int", "int", "int32", 1), ("unsigned", "unsigned int", "uint32", 1),
        ("unsigned int", "unsigned int", "uint32", 1), ("uint32_t", "uint32_t", "uint32", 1),
        ("long", "long", "int64", 1), ("long int", "long", "int64", 1),
        ("long long", "long long", "int64", 1), ("long long int", "long long", "int64", 1),
        ("int64_t", "int64_t", "int64", 1), ("std::int64_t", "int64_t", "int64", 1),
        ("unsigned long long", "unsigned long long", "uint64", 1),
        ("uint64_t", "uint64_t", "uint64", 1), ("size_t", "size_t", "uint64", 1),
        ("short", "short", "int16", 1), ("short int", "short", "int16", 1),
        ("int16_t", "int16_t", "int16", 1), ("unsigned short", "unsigned short", "uint16", 1),
        ("uint16_t", "uint16_t", "uint16", 1), ("char", "char", "int8", 1),
        ("signed char", "signed char", "int8", 1), ("int8_t", "int8_t", "int8", 1),
        ("unsigned char", "unsigned char", "uint8", 1), ("uint8_t", "uint8_t", "uint8", 1),
        ("bool", "bool", "bool", 1), ("float4", "float4", "float32", 4),
        ("float2", "float2", "float32", 2), ("double2", "double2", "float64", 2),
        ("int4", "int4", "int32", 4), ("uint2", "uint2", "uint32", 2),
        ("uchar4", "uchar4", "uint8", 4), ("__half2", "__half2", "float16", 2),
        ("__nv_bfloat162", "__nv_bfloat162", "bfloat16", 2),
    ])
    def test_ctype_to_dtype(self, declared, ctype, dtype, width):
        code = (f'extern "C" __global__ void k(const {declared}* __restrict__ p, {declared} v) '
                "{}\n")
        toml = '[[launch]]\nkernel = "k"\ngrid = [1]\nblock = [1]\nargs = ["p", "v"]'
        pointer, value = parse_submission(submission(toml, code)).kernels["k"].params
        assert pointer == Param("p", ctype, dtype, pointer=True, const=True, vector_width=width)
        assert value == Param("v", ctype, dtype, pointer=False, const=False, vector_width=width)

    @pytest.mark.parametrize("params, expected", [
        ("float const* a", (True, True)), ("float* const a", (True, False)),
        ("const float* __restrict a", (True, True)), ("float a[]", (True, False)),
        ("const int a", (False, False)), ("volatile float* a", (True, False)),
    ])
    def test_pointer_and_pointee_const(self, params, expected):
        code = f'extern "C" __global__ void k({params}) {{}}\n'
        toml = '[[launch]]\nkernel = "k"\ngrid = [1]\nblock = [1]\nargs = ["a"]'
        (param,) = parse_submission(submission(toml, code)).kernels["k"].params
        assert (param.pointer, param.const) == expected

    def test_declaration_forms(self):
        """extern "C" before, after or around __global__, launch bounds anywhere, prototypes."""
        code = '''extern "C" __global__ void proto(float* a);
extern "C" {
__device__ char brace() { return '{'; }
__global__ void __launch_bounds__(256, 2) inside(float* a) {}
}
__global__ extern "C" void after(float* a) {}
extern "C" __global__ __launch_bounds__(128) void bounded(float* a) {}
extern "C"
__global__
void split(float* a) {}
extern "C" __global__ void proto(float* first) {}
template <typename T> __global__ void templated(T* a) {}
extern "C" __global__ void none(void) {}
'''
        toml = '[[launch]]\nkernel = "inside"\ngrid = [1]\nblock = [1]\nargs = ["a"]'
        kernels = parse_submission(submission(toml, code)).kernels
        assert {name: k.line for name, k in kernels.items()} == {
            "inside": 11, "after": 13, "bounded": 14, "split": 17, "proto": 18, "none": 20}
        assert kernels["proto"].params[0].name == "first"
        assert kernels["none"].params == ()

    @pytest.mark.parametrize("param, message", [
        ("void* p", r"has type 'void\*', which mutagym cannot bind; use float, double"),
        ("long double v", r"has type 'long double', which mutagym cannot bind"),
        ("struct Pair* p", r"has type 'Pair\*', which mutagym cannot bind"),
        ("float** p", r"is a pointer to a pointer; pass each buffer as its own parameter"),
        ("float& p", r"is a reference; kernel parameters are pointers or values"),
        ("float*", r"has no name; name every kernel parameter"),
        ("unsigned int", r"has no name"),
        ("foo::bar p", r"cannot be parsed; write the type without a namespace"),
    ])
    def test_refused_parameters(self, param, message):
        code = f'extern "C" __global__ void k(int n, {param}) {{}}\n'
        toml = '[[launch]]\nkernel = "k"\ngrid = [1]\nblock = [1]\nargs = ["n", "p"]'
        refused(submission(toml, code), rf"^line 8, kernel 'k': parameter 1 \('.*'\) {message}")

    def test_defined_twice(self):
        code = 'extern "C" __global__ void relu(float* x) {}\n' + RELU_CODE
        refused(submission(code=code), r"^line 9, kernel 'relu': kernel 'relu' is defined twice "
                                       r"\(lines 8 and 9\)$")

    def test_unknown_kernel(self):
        text = submission(RELU_TOML.replace('"relu"', '"rleu"'))
        refused(text, r"^line 3, launch 0: kernel 'rleu' is not defined \(did you mean 'relu'\?\); "
                      r"__global__ kernels in the source: 'relu'$")

    @pytest.mark.parametrize("linkage", ["", 'extern "C++" '])
    def test_kernel_of_cxx_linkage(self, linkage):
        """C++ linkage is launched too: the backends find its mangled symbol."""
        text = submission(code=RELU_CODE.replace('extern "C" ', linkage))
        assert str(parse_submission(text).kernels["relu"]) == "relu(const float* x, float* out, int n)"

    def test_wrong_arg_count(self):
        text = submission(RELU_TOML.replace('"n"]', '"n", "extra"]'))
        refused(text, r"^line 6, launch 0: kernel 'relu' takes 3 parameters but args lists 4: "
                      r"relu\(const float\* x, float\* out, int n\)$")

    @pytest.mark.parametrize("intrinsic", [
        "__syncthreads()", "__syncthreads_count(1)", "__syncthreads_and(1)", "__syncthreads_or(1)",
        "__syncwarp()", "__shfl_sync(~0u, v, 0)", "__shfl_up_sync(~0u, v, 1)",
        "__shfl_down_sync(~0u, v, 1)", "__shfl_xor_sync(~0u, v, 1)", "__ballot_sync(~0u, 1)",
        "__any_sync(~0u, 1)", "__all_sync(~0u, 1)", "__activemask()", "__match_any_sync(~0u, v)",
        "__match_all_sync(~0u, v, &v)", "__reduce_add_sync(~0u, v)"])
    def test_uses_barriers(self, intrinsic):
        code = insert(f"int v = i; {intrinsic};")
        assert parse_submission(submission(code=code)).uses_barriers

    @pytest.mark.parametrize("code", [
        "#include <cooperative_groups.h>\n", '#include "cooperative_groups.h"\n',
        "namespace cg = cooperative_groups;\n"])
    def test_cooperative_groups_use_barriers(self, code):
        """Groups sync and exchange through the emulator's barriers and collectives."""
        assert parse_submission(submission(code=code + RELU_CODE)).uses_barriers

    def test_barrier_in_a_comment_does_not_count(self):
        code = RELU_CODE + "// __syncthreads();\n/* __shfl_sync */\n"
        assert not parse_submission(submission(code=code)).uses_barriers


class TestConstantLaunchShapes:
    def test_block_of_2048_threads(self):
        err = refused(submission(RELU_TOML.replace("[256]", "[2048]")),
                      r"^line 2, launch 0 \(relu\): block\[0\] = '2048' evaluates to 2048; CUDA "
                      r"allows 1 to 1024 in block x$", LaunchError)
        assert err.where == "launch 0 (relu)"

    def test_block_product(self):
        refused(submission(RELU_TOML.replace("[256]", '[64, "4 * 8"]')),
                r"^line 2, launch 0 \(relu\): block = \['64', '4 \* 8'\] evaluates to \(64, 32\) = "
                r"2048 threads; CUDA allows at most 1024 threads per block$", LaunchError)

    def test_block_z(self):
        refused(submission(RELU_TOML.replace("[256]", "[1, 1, 65]")),
                r"block\[2\] = '65' evaluates to 65; CUDA allows 1 to 64 in block z", LaunchError)

    def test_block_zero(self):
        refused(submission(RELU_TOML.replace("[256]", '["16 - 16"]')),
                r"block\[0\] = '16 - 16' evaluates to 0; CUDA allows 1 to 1024", LaunchError)

    def test_grid_y(self):
        refused(submission(RELU_TOML.replace('["ceil_div(n, 256)"]', '["n", 65536]')),
                r"grid\[1\] = '65536' evaluates to 65536; CUDA allows 1 to 65535 in grid y",
                LaunchError)

    def test_shared_bytes(self):
        refused(submission(RELU_TOML + "\nshared_bytes = 49153"),
                r"shared_bytes = '49153' evaluates to 49153; dynamic shared memory must be 0 to "
                r"49152 bytes", LaunchError)

    def test_constant_division_by_zero(self):
        refused(submission(RELU_TOML.replace("[256]", '["256 // 0"]')),
                r"^line 5, launch 0 block\[0\]: division by zero in '256 // 0'$", LaunchError)

    def test_expressions_with_names_wait_for_the_plan(self):
        parse_submission(submission(RELU_TOML.replace("[256]", '["threads * 2048"]')))


class TestExpressions:
    @pytest.mark.parametrize("text, env, value", [
        ("ceil_div(n, 256)", {"n": 1000}, 4), ("ceil_div(n, 256)", {"n": 1024}, 4),
        ("min(rows, 65535)", {"rows": 70000}, 65535), ("max(a, b, c)", {"a": 1, "b": 5, "c": 3}, 5),
        ("(n + 255) // 256", {"n": 257}, 2), ("-7 // 2", {}, -4), ("-7 % 3", {}, 2),
        ("a - b - c", {"a": 10, "b": 3, "c": 2}, 5), ("a // b * c", {"a": 7, "b": 2, "c": 3}, 9),
        ("2 * -n", {"n": 3}, -6), ("- -n", {"n": 3}, 3), ("1 + 2 * 3", {}, 7),
        ("(1 + 2) * 3", {}, 9), ("ceil_div(-7, 2)", {}, -3), (256, {}, 256), (-1, {}, -1),
        ("  rows*cols  ", {"rows": 3, "cols": 4}, 12),
    ])
    def test_evaluate(self, text, env, value):
        assert parse_expression(text, where="test").evaluate(env) == value

    def test_text_and_names(self):
        expr = parse_expression(" min(rows, cols) * k ", where="grid[0]", line=4)
        assert (expr.text, expr.names, expr.where, expr.line) == (
            "min(rows, cols) * k", frozenset({"rows", "cols", "k"}), "grid[0]", 4)
        assert str(parse_expression(256, where="block[0]")) == "256"

    def test_hashable_and_picklable(self):
        expr = parse_expression("ceil_div(n, 256)", where="grid[0]")
        assert hash(expr) == hash(pickle.loads(pickle.dumps(expr)))

    @pytest.mark.parametrize("text, message", [
        ("", r"expression is empty"),
        ("n +", r"at column 4: expected a number, a name or '\(' but found the end"),
        ("n ** 2", r"at column 4: expected a number, a name or '\(' but found '\*'"),
        ("n / 2", r"at column 3: '/' is not an operator; use '//' for floor division"),
        ("n $ 2", r"at column 3: expected an operator but found '\$'"),
        ("(n + 1", r"at column 7: expected '\)' but found the end"),
        ("n 2", r"at column 3: expected an operator but found '2'"),
        ("ceil(n, 2)", r"at column 1: unknown function 'ceil' \(did you mean 'ceil_div'\?\); "
                       r"allowed: ceil_div, min, max"),
        ("ceil_div(n)", r"ceil_div\(\) takes exactly 2 arguments, got 1"),
        ("min(n)", r"min\(\) takes at least 2 arguments, got 1"),
        ("(" * 40 + "n" + ")" * 40, r"nested more than 32 levels deep"),
        ("n + " * 80 + "n", r"expression is 321 characters long; at most 256: 'n \+ n"),
    ])
    def test_syntax_errors(self, text, message):
        with pytest.raises(SubmissionError, match=r"^line 3, grid\[0\]: .*" + message):
            parse_expression(text, where="grid[0]", line=3)

    def test_unknown_name(self):
        expr = parse_expression("ceil_div(nn, 256)", where="launch 0 grid[0]", line=4)
        with pytest.raises(LaunchError, match=r"^line 4, launch 0 grid\[0\]: unknown name 'nn' in "
                                              r"'ceil_div\(nn, 256\)' \(did you mean 'n'\?\); "
                                              r"known names: 'n', 'rows'$"):
            expr.evaluate({"n": 1, "rows": 2})

    @pytest.mark.parametrize("text", ["n // k", "n % k", "ceil_div(n, k)"])
    def test_division_by_zero(self, text):
        expr = parse_expression(text, where="grid[0]")
        with pytest.raises(LaunchError, match=rf"^grid\[0\]: division by zero in '{text}' with "
                                              r"k=0, n=5$".replace("(", r"\(").replace(")", r"\)")):
            expr.evaluate({"n": 5, "k": 0})


class TestStripCommentsAndStrings:
    def test_blanks_and_keeps_layout(self):
        source = 'f("a;b"); // x\n/* y\n z */ g(\'}\'); int k = 1\'000;\n'
        stripped = strip_comments_and_strings(source)
        assert stripped == 'f("   ");     \n    \n      g(\' \'); int k = 1\'000;\n'
        assert len(stripped) == len(source)

    def test_escaped_quotes_and_raw_strings(self):
        source = 'a("x\\"y"); b(R"d(raw ")" text)d"); c(u8"z");'
        assert strip_comments_and_strings(source) == 'a("    "); b(R"                "); c(u8" ");'

    def test_line_splice_inside_a_line_comment(self):
        """A backslash-newline continues a // comment: the next line is a comment too."""
        source = "int a; // comment \\\nsystem(); \nint b;"
        expected = "int a;" + " " * 13 + "\n" + " " * 10 + "\nint b;"
        assert strip_comments_and_strings(source) == expected

    def test_line_splice_in_code_is_kept(self):
        source = "#define A \\\n  1\nint b = A;"
        assert strip_comments_and_strings(source) == source

    def test_every_line_break_survives(self):
        source = LAYERNORM + '/* a\r\nb */ "c"\r\n'
        stripped = strip_comments_and_strings(source)
        assert [i for i, c in enumerate(stripped) if c in "\r\n"] == [
            i for i, c in enumerate(source) if c in "\r\n"]
