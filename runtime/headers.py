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
#: `mg_cooperative_groups.h`).
CUDA_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h",
                "cooperative_groups/reduce.h", "cooperative_groups/scan.h", "mma.h")
#: Of those, the ones that bring CUDA's C++ library (CCCL), which defines the fixed-width integer
#: types itself under NVRTC (see `source_prep`).
CCCL_HEADERS = ("cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/scan.h")

#: Headers a submission may include (angle or quote form); NVRTC has no others.
ALLOWED_HEADERS = CUDA_HEADERS + STANDARD_HEADERS + RUNTIME_HEADERS

#: An `#include` line of one of the allowed headers (the whole line).
ALLOWED_INCLUDE_LINE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"](?:' + "|".join(re.escape(h) for h in ALLOWED_HEADERS) + r')[>"][^\n]*$',
    re.MULTILINE)
