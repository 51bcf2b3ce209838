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

    def test_macros_only_with_their_header(self):
        """INT32_MAX comes with stdint.h, M_PI with math.h, std:: names with the C++ forms."""
        plain = prepare_for_nvrtc("int x;\n")
        assert "INT32_MAX" not in plain and "M_PI" not in plain and "namespace std" not in plain
        with_c = prepare_for_nvrtc("#include <stdint.h>\n#include <math.h>\n")
        assert "#define INT32_MAX" in with_c and "#define M_PI" in with_c
        assert "namespace std" not in with_c
        with_cpp = prepare_for_nvrtc("#include <cstdint>\n#include <cmath>\n")
        assert "using ::int32_t;" in with_cpp and "using ::sqrt;" in with_cpp

    def test_leaves_other_includes_alone(self):
        """Only whole include lines of the four headers are touched (the parser refuses others)."""
        source = '#include <stdio.h>\n#include <stdint.hpp>\n// #include <stdint.h>\n'
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
