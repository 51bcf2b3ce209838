"""The headers a submission may include, in one place.

The submission check refuses every other `#include`, the preprocessor check stubs these (it runs
without system headers), the emulator's translation drops their lines (the emulation header
provides what they declare) and the NVRTC preparation (`source_prep`) blanks the ones NVRTC has no
file for, so all of them read this table.
"""

from __future__ import annotations

import re

#: The C and C++ standard headers kernels include: NVRTC has no files for them (it has the math
#: functions, `printf`, `assert`, `memcpy` and `memset` built in), so their lines are blanked for
#: NVRTC and the prelude of `source_prep` supplies their types and macros.
STANDARD_HEADERS = ("stdint.h", "cstdint", "math.h", "cmath", "float.h", "cfloat", "limits.h",
                    "climits", "stdio.h", "cstdio", "assert.h", "cassert", "string.h", "cstring",
                    "stddef.h", "cstddef")
#: The runtime headers nvcc includes in every .cu file anyway: what device code has of them is
#: built into NVRTC or in `source_prep`'s prelude (`CUDART_*` of math_constants.h), so their lines
#: are blanked for NVRTC like the standard headers' and dropped for the emulator.
RUNTIME_HEADERS = ("cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h",
                   "math_constants.h")
#: CUDA's own headers: NVRTC reads the real ones (through `-I`, `nvrtc.compile_options`); the
#: emulator has its own versions of what they declare (`csrc/mg_half.h`, `mg_bf16.h`,
#: `mg_cooperative_groups.h`, `mg_pipeline.h`, `mg_wmma.h`). The pipeline headers need only the
#: CUDA include folder (`nv/target` is there), not CCCL; `mma.h` needs `crt/mma.h` beside it (the
#: `nvidia-cuda-crt` wheel).
CUDA_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h",
                "cooperative_groups/reduce.h", "cooperative_groups/scan.h", "cuda_pipeline.h",
                "cuda_pipeline_primitives.h", "mma.h")
#: Of those, the ones that bring CUDA's C++ library (CCCL), which defines the fixed-width integer
#: types itself under NVRTC (see `source_prep`).
CCCL_HEADERS = ("cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/scan.h")

#: Of those, the pipeline primitives', which under NVRTC typedef some fixed-width types
#: themselves (`cuda_pipeline_helpers.h`, `cuda_awbarrier_helpers.h`): the 64-bit ones as
#: `unsigned long long`, so the NVRTC prelude then declares them the same way (see `source_prep`).
PIPELINE_HEADERS = ("cuda_pipeline.h", "cuda_pipeline_primitives.h")
PIPELINE_TYPES = (("uint64_t", "unsigned long long"), ("uintptr_t", "unsigned long long"))

#: Headers a submission may include (angle or quote form); NVRTC has no others.
ALLOWED_HEADERS = CUDA_HEADERS + STANDARD_HEADERS + RUNTIME_HEADERS

#: An `#include` line of one of the allowed headers (the whole line).
ALLOWED_INCLUDE_LINE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"](?:' + "|".join(re.escape(h) for h in ALLOWED_HEADERS) + r')[>"][^\n]*$',
    re.MULTILINE)
