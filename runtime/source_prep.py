"""Make a submission's text acceptable to NVRTC without moving a single line.

NVRTC has no system headers: `#include <stdint.h>` fails, and `int32_t`, `INT32_MAX`, `INT_MAX`,
`FLT_MAX`, `M_PI`, `INFINITY` and the `std::` forms of the math functions are not defined (math
functions themselves, `printf`, `assert`, `memcpy`, `memset`, `size_t` and `ptrdiff_t` are built
in). `prepare_for_nvrtc` blanks the includes of the C and C++ standard headers
(`headers.STANDARD_HEADERS`) and of the runtime headers nvcc includes anyway
(`headers.RUNTIME_HEADERS`: `cuda_runtime.h`, `device_launch_parameters.h`, ...), and puts a
short prelude in front that supplies what they would have, followed by `#line 1`, so every
compiler message still names the submission's own line. The
prelude is the same whichever of them a text includes: the emulator's header always declares all
of it (nvcc's implicit `<math.h>` does the same for the math macros), so a text means the same to
both compilers. CUDA's headers (`cuda_fp16.h`, `cooperative_groups.h`, ...) stay: they resolve
through `-I` (see `mutagym.runtime.nvrtc`).

The integer types follow the LP64 Linux ABI that g++ (the CPU emulator) sees, so `int64_t` is
`long`, not `long long`, on both backends; except with the cooperative-groups headers, which bring
CUDA's C++ library (CCCL): under NVRTC it declares the fixed-width types itself, with `long long`
for the 64-bit ones, so the prelude then takes them (and the limit macros) from CCCL's own headers
instead of declaring its own, which would clash; and with the pipeline headers, which declare
`uint64_t` and `uintptr_t` as `unsigned long long` under NVRTC, as the prelude then does too.
"""

from __future__ import annotations

import re
from pathlib import Path

from .headers import CCCL_HEADERS, PIPELINE_HEADERS, PIPELINE_TYPES, RUNTIME_HEADERS, STANDARD_HEADERS

__all__ = ["prepare_for_nvrtc", "PRELUDE_MACROS", "STRIPPED_HEADERS"]

#: Headers whose `#include` lines are replaced by an empty line.
STRIPPED_HEADERS = STANDARD_HEADERS + RUNTIME_HEADERS

_INCLUDE = re.compile(
    r"""^[ \t]*\#[ \t]*include[ \t]*[<"](?P<header>[\w./]+)[>"]"""
    r"""[ \t]*(?://.*|/\*.*\*/[ \t]*)?$"""
)

_INT_TYPES = (
    ("int8_t", "signed char"), ("int16_t", "short"), ("int32_t", "int"), ("int64_t", "long"),
    ("uint8_t", "unsigned char"), ("uint16_t", "unsigned short"), ("uint32_t", "unsigned int"),
    ("uint64_t", "unsigned long"), ("intptr_t", "long"), ("uintptr_t", "unsigned long"),
    ("intmax_t", "long"), ("uintmax_t", "unsigned long"),
)

#: The fixed-width integer types (the design promises them without an include).
_TYPEDEFS = " ".join(f"typedef {ctype} {name};" for name, ctype in _INT_TYPES)
#: The same where the pipeline headers declare some of them their way.
_PIPELINE_TYPEDEFS = " ".join(f"typedef {dict(PIPELINE_TYPES).get(name, ctype)} {name};" for name, ctype in _INT_TYPES)
#: The short unsigned names that nvcc's host headers declare and device code uses (`uint i`).
_SHORT_UNSIGNED = "typedef unsigned int uint; typedef unsigned short ushort; typedef unsigned long ulong;"
#: With CCCL: its own declarations of the types and limits, before anything of ours.
_CCCL_PRELUDE = "#include <cuda/std/cstdint>\n#include <cuda/std/climits>\n#include <cuda/std/cfloat>"

_INT_MACROS = (
    ("INT8_MIN", "(-128)"), ("INT8_MAX", "127"), ("UINT8_MAX", "255"),
    ("INT16_MIN", "(-32767-1)"), ("INT16_MAX", "32767"), ("UINT16_MAX", "65535"),
    ("INT32_MIN", "(-2147483647-1)"), ("INT32_MAX", "2147483647"), ("UINT32_MAX", "4294967295U"),
    ("INT64_MIN", "(-9223372036854775807L-1)"), ("INT64_MAX", "9223372036854775807L"),
    ("UINT64_MAX", "18446744073709551615UL"), ("SIZE_MAX", "18446744073709551615UL"),
    ("INTPTR_MIN", "(-9223372036854775807L-1)"), ("INTPTR_MAX", "9223372036854775807L"),
    ("UINTPTR_MAX", "18446744073709551615UL"),
)

#: <limits.h> for the LP64 ABI (x86-64: `char` is signed).
_LIMIT_MACROS = (
    ("CHAR_BIT", "8"), ("SCHAR_MIN", "(-128)"), ("SCHAR_MAX", "127"), ("UCHAR_MAX", "255"),
    ("CHAR_MIN", "(-128)"), ("CHAR_MAX", "127"), ("SHRT_MIN", "(-32767-1)"), ("SHRT_MAX", "32767"),
    ("USHRT_MAX", "65535"), ("INT_MIN", "(-2147483647-1)"), ("INT_MAX", "2147483647"),
    ("UINT_MAX", "4294967295U"), ("LONG_MIN", "(-9223372036854775807L-1)"),
    ("LONG_MAX", "9223372036854775807L"), ("ULONG_MAX", "18446744073709551615UL"),
    ("LLONG_MIN", "(-9223372036854775807LL-1)"), ("LLONG_MAX", "9223372036854775807LL"),
    ("ULLONG_MAX", "18446744073709551615ULL"),
)

#: <float.h>: IEEE binary32 and binary64 (hexadecimal literals are exact).
_FLOAT_MACROS = (
    ("FLT_RADIX", "2"), ("FLT_MANT_DIG", "24"), ("DBL_MANT_DIG", "53"), ("FLT_DIG", "6"),
    ("DBL_DIG", "15"), ("FLT_DECIMAL_DIG", "9"), ("DBL_DECIMAL_DIG", "17"), ("DECIMAL_DIG", "17"),
    ("FLT_MIN_EXP", "(-125)"), ("DBL_MIN_EXP", "(-1021)"), ("FLT_MAX_EXP", "128"),
    ("DBL_MAX_EXP", "1024"), ("FLT_MIN_10_EXP", "(-37)"), ("DBL_MIN_10_EXP", "(-307)"),
    ("FLT_MAX_10_EXP", "38"), ("DBL_MAX_10_EXP", "308"),
    ("FLT_MAX", "0x1.fffffep+127F"), ("FLT_MIN", "0x1p-126F"), ("FLT_EPSILON", "0x1p-23F"),
    ("FLT_TRUE_MIN", "0x1p-149F"), ("DBL_MAX", "0x1.fffffffffffffp+1023"),
    ("DBL_MIN", "0x1p-1022"), ("DBL_EPSILON", "0x1p-52"), ("DBL_TRUE_MIN", "0x1p-1074"),
)

_MATH_MACROS = (
    # NVRTC has no __builtin_inff/__builtin_nanf; these divisions fold to constants (constexpr-safe).
    ("INFINITY", "(1.0f/0.0f)"), ("NAN", "(0.0f/0.0f)"), ("HUGE_VALF", "(1.0f/0.0f)"),
    ("HUGE_VAL", "(1.0/0.0)"),
    ("M_E", "2.7182818284590452354"), ("M_LOG2E", "1.4426950408889634074"),
    ("M_LOG10E", "0.43429448190325182765"), ("M_LN2", "0.69314718055994530942"),
    ("M_LN10", "2.30258509299404568402"), ("M_PI", "3.14159265358979323846"),
    ("M_PI_2", "1.57079632679489661923"), ("M_PI_4", "0.78539816339744830962"),
    ("M_1_PI", "0.31830988618379067154"), ("M_2_PI", "0.63661977236758134308"),
    ("M_2_SQRTPI", "1.12837916709551257390"), ("M_SQRT2", "1.41421356237309504880"),
    ("M_SQRT1_2", "0.70710678118654752440"),
)

# The CUDART_* constants (CUDA's math_constants.h) that the CPU emulator always provides, read
# from its header so both backends accept the same text; NVRTC has no __builtin_huge_valf/nanf,
# so the infinities and NaNs are spelled as bit casts there.
_BIT_CAST_CONSTANTS = {
    "CUDART_INF_F": "__int_as_float(0x7f800000)", "CUDART_NAN_F": "__int_as_float(0x7fffffff)",
    "CUDART_INF": "__longlong_as_double(0x7ff0000000000000LL)",
    "CUDART_NAN": "__longlong_as_double(0xfff8000000000000ULL)",
}
_CUDART_MACROS = tuple(
    (name, _BIT_CAST_CONSTANTS.get(name, value.strip()))
    for name, value in re.findall(r"^#define (CUDART_\w+) ([^/\n]+)",
                                  (Path(__file__).with_name("csrc") / "mg_math.h").read_text(), re.M))

#: `<cstdint>` and `<cstddef>` declare the types in `std::` as well.
_STD_INTS = ("namespace std { using ::size_t; using ::ptrdiff_t; "
             + " ".join(f"using ::{name};" for name, _ in _INT_TYPES) + " }")

#: `<cmath>` declares the math functions in `std::`; NVRTC declares them only globally.
_STD_MATH_NAMES = (
    "abs fabs fmod remainder fma fmax fmin fdim exp exp2 expm1 log log2 log10 log1p pow sqrt cbrt "
    "hypot sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma "
    "ceil floor trunc round lround llround rint lrint llrint nearbyint frexp ldexp modf scalbn "
    "scalbln ilogb logb nextafter copysign isnan isinf isfinite signbit"
).split()
_STD_MATH = "namespace std { " + " ".join(f"using ::{name};" for name in _STD_MATH_NAMES) + " }"
#: `<cstring>`'s two device functions (NVRTC has them built in, globally).
_STD_STRING = "namespace std { using ::memcpy; using ::memset; }"


#: Every macro the prelude defines: the emulator's build defines each of them as well, so these
#: are the C library's macros a text may name (`preprocessed.refused_emulator_macros`).
PRELUDE_MACROS = frozenset(name for group in (_CUDART_MACROS, _INT_MACROS, _LIMIT_MACROS, _FLOAT_MACROS,
                                              _MATH_MACROS) for name, _ in group)


def _defines(macros: tuple[tuple[str, str], ...]) -> list[str]:
    return [f"#ifndef {name}\n#define {name} {value}\n#endif" for name, value in macros]


def prepare_for_nvrtc(source: str) -> str:
    """Return *source* with its standard-header includes blanked and a prelude in front.

    Every line of *source* keeps its number (a `#line 1` follows the prelude) and its line ending;
    only the `#include` lines of `STRIPPED_HEADERS` become empty.

    >>> out = prepare_for_nvrtc('#include <stdint.h>\\nint32_t x;\\n')
    >>> out.splitlines()[-3:]
    ['#line 1', '', 'int32_t x;']
    >>> 'typedef int int32_t;' in out and 'INT32_MAX' in out and 'INFINITY' in out
    True
    >>> 'typedef int int32_t;' in prepare_for_nvrtc('#include <cooperative_groups.h>\\n')
    False
    >>> 'typedef unsigned long long uint64_t;' in prepare_for_nvrtc('#include <cuda_pipeline.h>\\n')
    True
    """
    lines = source.splitlines(keepends=True)
    cccl = pipeline = False
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        match = _INCLUDE.match(body)
        if match and match["header"] in STRIPPED_HEADERS:
            lines[number] = line[len(body):]  # keep only the line ending
        elif match and match["header"] in CCCL_HEADERS:
            cccl = True
        elif match and match["header"] in PIPELINE_HEADERS:
            pipeline = True
    types = _CCCL_PRELUDE if cccl else _PIPELINE_TYPEDEFS if pipeline else _TYPEDEFS
    prelude = [types, _SHORT_UNSIGNED, *_defines(_CUDART_MACROS),
               *_defines(_INT_MACROS), *_defines(_LIMIT_MACROS), *_defines(_FLOAT_MACROS),
               *_defines(_MATH_MACROS), _STD_INTS, _STD_MATH, _STD_STRING, "#line 1"]
    return "\n".join(prelude) + "\n" + "".join(lines)
