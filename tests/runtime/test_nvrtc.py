"""NVRTC compile gate and source preparation: real libnvrtc, no GPU needed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from mutagym.runtime.errors import CompileError, InfrastructureError
from mutagym.runtime.nvrtc import NvrtcResult, cuda_include_dir, nvrtc_compile, nvrtc_version
from mutagym.runtime.source_prep import prepare_for_nvrtc

SCALE = textwrap.dedent("""\
    /* mutagym
    [[launch]]
    kernel = "scale"
    grid = ["ceil_div(n, 256)"]
    block = [256]
    args = ["x", "out", "n", "alpha"]
    */
    extern "C" __global__ void scale(const float* x, float* out, int n, float alpha) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = alpha * expf(x[i]);
    }
    """)


def kernel(body: str, *, headers: str = "", params: str = "float* out") -> str:
    """A one-kernel source: *headers* lines, then `k(params)` whose body is *body*."""
    return f'{headers}extern "C" __global__ void k({params}) {{\n{body}\n}}\n'


class TestPrepareForNvrtc:
    def test_blanks_standard_includes_and_keeps_line_numbers(self):
        """The four standard headers become empty lines; every other line keeps its number."""
        source = ("#include <stdint.h>\n#include <cmath>\n# include \"math.h\"  // math\n"
                  "#include<cstdint>\nint32_t x;\n")
        prepared = prepare_for_nvrtc(source)
        body = prepared.split("#line 1\n", 1)[1]
        assert body == "\n\n\n\nint32_t x;\n"

    def test_keeps_half_precision_includes(self):
        """cuda_fp16.h and cuda_bf16.h stay: NVRTC finds them through -I."""
        source = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
        assert prepare_for_nvrtc(source).endswith("#line 1\n" + source)

    def test_keeps_crlf_line_endings(self):
        """A CRLF file stays CRLF after its include line is blanked."""
        prepared = prepare_for_nvrtc("#include <stdint.h>\r\nint32_t x;\r\n")
        assert prepared.endswith("#line 1\n\r\nint32_t x;\r\n")

    def test_prelude_always_defines_the_integer_types(self):
        """The fixed-width types come without any include, as the design promises."""
        prepared = prepare_for_nvrtc("int x;\n")
        assert prepared.splitlines()[0].startswith("typedef signed char int8_t;")
        assert "typedef long int64_t;" in prepared and "typedef unsigned long uintptr_t;" in prepared

    def test_prelude_is_the_same_with_or_without_includes(self):
        """INT32_MAX, INT_MAX, FLT_MAX, M_PI, INFINITY and the std:: names come whichever standard
        header is included, or none: the emulator's header always declares them too."""
        plain = prepare_for_nvrtc("int x;\n")
        for name in ("#define INT32_MAX", "#define INT_MAX", "#define FLT_MAX", "#define M_PI",
                     "#define INFINITY", "using ::int32_t;", "using ::sqrt;"):
            assert name in plain, name
        with_headers = prepare_for_nvrtc("#include <stdint.h>\n#include <cfloat>\n#include <climits>\n")
        assert with_headers.split("#line 1\n")[0] == plain.split("#line 1\n")[0]

    def test_cooperative_groups_take_the_integer_types_from_cccl(self):
        """With cooperative_groups.h, CUDA's C++ library declares the fixed-width types under NVRTC
        (int64_t is long long there), so the prelude includes its headers instead of typedefs."""
        prepared = prepare_for_nvrtc("#include <cooperative_groups.h>\nint64_t x;\n")
        assert prepared.startswith("#include <cuda/std/cstdint>\n") and "typedef long int64_t;" not in prepared
        assert prepared.endswith("#line 1\n#include <cooperative_groups.h>\nint64_t x;\n")

    def test_blanks_every_standard_header_and_leaves_others_alone(self):
        """stdio.h, float.h, limits.h, assert.h, string.h, stddef.h, their C++ forms and the
        runtime headers nvcc includes anyway are blanked; other includes and commented ones are
        left as they are (the parser refuses unknown headers)."""
        headers = ("stdio.h", "cfloat", "climits", "cassert", "string.h", "cstring", "float.h",
                   "cstddef", "cuda_runtime.h", "device_launch_parameters.h", "math_constants.h")
        blanked = "".join(f"#include <{h}>\n" for h in headers)
        assert prepare_for_nvrtc(blanked).endswith("#line 1\n" + "\n" * len(headers))
        source = '#include <stdint.hpp>\n// #include <stdint.h>\n#include <cuda_fp16.h>\n'
        assert prepare_for_nvrtc(source).endswith("#line 1\n" + source)


class TestNvrtcCompile:
    def test_valid_kernel_gives_ptx(self):
        """A valid submission compiles to PTX that defines its extern "C" kernel."""
        result = nvrtc_compile(SCALE)
        assert isinstance(result, NvrtcResult)
        assert ".visible .entry scale(" in result.ptx
        assert result.arch == "compute_80" and result.cubin == b"" and result.seconds > 0

    def test_real_architecture_gives_cubin(self):
        """An sm_XX arch also yields a cubin (an ELF image)."""
        result = nvrtc_compile(SCALE, arch="sm_90")
        assert result.cubin.startswith(b"\x7fELF") and ".entry scale(" in result.ptx

    def test_syntax_error_names_line_and_keeps_log(self):
        """A syntax error is a CompileError with the line, the first error and NVRTC's log."""
        source = kernel("    int i = threadIdx.x\n    out[i] = 1.0f;")
        with pytest.raises(CompileError, match=r'^line 3: NVRTC rejected the kernel: expected a ";"') as info:
            nvrtc_compile(source)
        assert info.value.line == 3
        assert "submission.cu(3): error" in info.value.log

    def test_error_lines_match_the_submission_after_prep(self):
        """Blanked includes and the prelude do not shift the reported line."""
        source = kernel("    int32_t a = 1;\n    float b = M_PI;\n    out[0] = a + b + undefined_name;",
                        headers="#include <stdint.h>\n#include <math.h>\n\n")
        with pytest.raises(CompileError, match=r'^line 7: .*identifier "undefined_name" is undefined'):
            nvrtc_compile(source)

    def test_error_uses_the_given_name(self):
        """The program name appears in the log and still resolves the line."""
        with pytest.raises(CompileError, match="^line 2: ") as info:
            nvrtc_compile(kernel("    nope;"), name="mutant_17.cu")
        assert "mutant_17.cu(2): error" in info.value.log

    def test_fixed_width_types_and_stdint_macros(self):
        """`#include <stdint.h>` kernels using int32_t, uint8_t, int64_t and INT32_MAX compile."""
        source = kernel("    int64_t total = INT32_MAX;\n    uint8_t b = 7;\n    out[0] = total + b + n;",
                        headers="#include <stdint.h>\n", params="int32_t* out, int32_t n")
        assert ".entry k(" in nvrtc_compile(source).ptx

    def test_cstdint_and_cmath_std_names(self):
        """The C++ header forms give std::int32_t and std::sqrt, as they do with g++."""
        source = kernel("    std::int32_t i = threadIdx.x;\n"
                        "    out[i] = std::sqrt(std::fabs(out[i])) + std::isnan(out[i]) + INFINITY;",
                        headers="#include <cstdint>\n#include <cmath>\n")
        assert ".entry k(" in nvrtc_compile(source).ptx

    @pytest.mark.parametrize("header, ctype, convert", [
        ("cuda_fp16.h", "__half", "__float2half(__half2float(x[i]) * 2.0f)"),
        ("cuda_bf16.h", "__nv_bfloat16", "__float2bfloat16(__bfloat162float(x[i]) * 2.0f)"),
    ], ids=["fp16", "bf16"])
    def test_half_precision_headers(self, header, ctype, convert):
        """Kernels including cuda_fp16.h / cuda_bf16.h compile through the wheel's headers."""
        assert cuda_include_dir() is not None
        source = kernel(f"    int i = threadIdx.x;\n    out[i] = {convert};",
                        headers=f"#include <{header}>\n",
                        params=f"const {ctype}* x, {ctype}* out")
        assert ".entry k(" in nvrtc_compile(source).ptx

    def test_cache_returns_the_same_object(self):
        """A second compile of the same text and arch is a cache hit: the very same result."""
        first = nvrtc_compile(SCALE)
        assert nvrtc_compile(SCALE) is first
        assert nvrtc_compile(SCALE, arch="compute_86") is not first

    def test_rejection_is_cached_too(self):
        """A rejected text raises the same error again without recompiling."""
        source = kernel("    out[0] = not_declared_anywhere;")
        messages = []
        for _ in range(2):
            with pytest.raises(CompileError) as info:
                nvrtc_compile(source)
            messages.append((str(info.value), info.value.log))
        assert messages[0] == messages[1]

    def test_threads_compile_concurrently(self):
        """NVRTC programs are independent: parallel compiles of different texts all succeed."""
        sources = [kernel(f"    out[threadIdx.x] = {i}.0f * out[threadIdx.x];") for i in range(8)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(nvrtc_compile, sources))
        assert all(".entry k(" in r.ptx for r in results)
        assert len({r.ptx for r in results}) == len(sources)

    def test_bad_arch_is_refused(self):
        """An arch that is not compute_NN / sm_NN is a ValueError quoting it."""
        with pytest.raises(ValueError, match=r"arch 'ampere' is not of the form"):
            nvrtc_compile(SCALE, arch="ampere")


class TestNvrtcVersion:
    def test_version(self):
        """The wheel's NVRTC is CUDA 12 or later."""
        major, minor = nvrtc_version()
        assert major >= 12 and minor >= 0

    def test_missing_library_is_infrastructure_error(self):
        """When libnvrtc cannot be loaded, the error says which package to install."""
        script = textwrap.dedent("""\
            import cuda.pathfinder as pf
            def missing(name):
                raise pf.DynamicLibNotFoundError(f"lib{name} not found (simulated)")
            pf.load_nvidia_dynamic_lib = missing
            from mutagym.runtime.errors import InfrastructureError
            from mutagym.runtime.nvrtc import nvrtc_compile
            try:
                nvrtc_compile('extern "C" __global__ void k() {}')
            except InfrastructureError as err:
                print("InfrastructureError:", err)
            """)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "InfrastructureError: libnvrtc could not be loaded" in done.stdout
        assert "pip install cuda-bindings nvidia-cuda-nvrtc" in done.stdout
        assert issubclass(InfrastructureError, RuntimeError)
