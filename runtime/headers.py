"""The headers a submission may include, in one place.

The submission check refuses every other `#include`, the preprocessor check stubs these (it runs
without system headers), and the emulator's translation drops their lines (the emulation header
provides what they declare), so all three read this table.
"""

from __future__ import annotations

import re

#: Headers a submission may include (angle or quote form); NVRTC has no others.
ALLOWED_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "stdint.h", "math.h", "cstdint", "cmath")

#: An `#include` line of one of the allowed headers (the whole line).
ALLOWED_INCLUDE_LINE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"](?:' + "|".join(re.escape(h) for h in ALLOWED_HEADERS) + r')[>"][^\n]*$',
    re.MULTILINE)
