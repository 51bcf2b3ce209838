// What CUDA code expects of C++'s <cmath>, on top of C's <math.h>.
//
// The emulation header includes C's <math.h> directly (_GLIBCXX_INCLUDE_NEXT_C_HEADERS): libstdc++'s
// wrapper pulls in most of <cmath> and <type_traits>, which doubles the precompiled header and
// triples the time every kernel build spends loading it. This file restores what kernels use:
// float overloads (exp(float) is expf, as in CUDA's math library), pow(float, int) and
// pow(double, int), abs for every arithmetic type, the classification functions as functions
// rather than macros, and the std:: names (a kernel may include <cmath> and write std::exp).
// Exactly CUDA's overload set (tests/runtime/test_cuda_surface.py): no integer overloads, so
// `sqrt(n)` with an int n is ambiguous here as under NVRTC, and isnan(float) returns int, as NVRTC's.
#pragma once

#include <math.h>

#define __MG_UNARY(name) static inline float name(float x) { return name##f(x); }
#define __MG_BINARY(name) static inline float name(float x, float y) { return name##f(x, y); }

__MG_UNARY(acos) __MG_UNARY(asin) __MG_UNARY(atan) __MG_UNARY(cos) __MG_UNARY(sin) __MG_UNARY(tan)
__MG_UNARY(acosh) __MG_UNARY(asinh) __MG_UNARY(atanh) __MG_UNARY(cosh) __MG_UNARY(sinh) __MG_UNARY(tanh)
__MG_UNARY(exp) __MG_UNARY(exp2) __MG_UNARY(expm1) __MG_UNARY(log) __MG_UNARY(log10) __MG_UNARY(log1p)
__MG_UNARY(log2) __MG_UNARY(logb) __MG_UNARY(sqrt) __MG_UNARY(cbrt) __MG_UNARY(fabs) __MG_UNARY(ceil)
__MG_UNARY(floor) __MG_UNARY(round) __MG_UNARY(trunc) __MG_UNARY(rint) __MG_UNARY(nearbyint)
__MG_UNARY(erf) __MG_UNARY(erfc) __MG_UNARY(tgamma) __MG_UNARY(lgamma)
__MG_BINARY(pow) __MG_BINARY(atan2) __MG_BINARY(fmod) __MG_BINARY(fmax) __MG_BINARY(fmin)
__MG_BINARY(fdim) __MG_BINARY(hypot) __MG_BINARY(copysign) __MG_BINARY(nextafter) __MG_BINARY(remainder)
#undef __MG_UNARY
#undef __MG_BINARY

static inline float pow(float x, int n) { return powf(x, (float)n); }
static inline double pow(double x, int n) { return pow(x, (double)n); }
static inline float fma(float x, float y, float z) { return fmaf(x, y, z); }
static inline float ldexp(float x, int e) { return ldexpf(x, e); }
static inline float scalbn(float x, int e) { return scalbnf(x, e); }
static inline float frexp(float x, int* e) { return frexpf(x, e); }
static inline float modf(float x, float* i) { return modff(x, i); }
static inline int ilogb(float x) { return ilogbf(x); }
static inline long lround(float x) { return lroundf(x); }
static inline long long llround(float x) { return llroundf(x); }
static inline long lrint(float x) { return lrintf(x); }
static inline long long llrint(float x) { return llrintf(x); }

static inline int abs(int x) { return x < 0 ? -x : x; }
static inline long abs(long x) { return x < 0 ? -x : x; }
static inline long long abs(long long x) { return x < 0 ? -x : x; }
static inline float abs(float x) { return fabsf(x); }
static inline double abs(double x) { return fabs(x); }

#undef isnan
#undef isinf
#undef isfinite
#undef signbit
#define __MG_CLASSIFY(name)                                                                  \
    static inline int name(float x) { return __builtin_##name(x) != 0; }                     \
    static inline int name(double x) { return __builtin_##name(x) != 0; }
__MG_CLASSIFY(isnan) __MG_CLASSIFY(isinf) __MG_CLASSIFY(isfinite) __MG_CLASSIFY(signbit)
#undef __MG_CLASSIFY

namespace std {
using ::acos; using ::asin; using ::atan; using ::cos; using ::sin; using ::tan; using ::acosh;
using ::asinh; using ::atanh; using ::cosh; using ::sinh; using ::tanh; using ::exp; using ::exp2;
using ::expm1; using ::log; using ::log10; using ::log1p; using ::log2; using ::logb; using ::sqrt;
using ::cbrt; using ::fabs; using ::ceil; using ::floor; using ::round; using ::trunc; using ::rint;
using ::nearbyint; using ::erf; using ::erfc; using ::tgamma; using ::lgamma; using ::pow;
using ::atan2; using ::fmod; using ::fmax; using ::fmin; using ::fdim; using ::hypot;
using ::copysign; using ::nextafter; using ::remainder; using ::fma; using ::ldexp; using ::scalbn;
using ::frexp; using ::modf; using ::ilogb; using ::lround; using ::llround; using ::lrint;
using ::llrint; using ::abs; using ::isnan; using ::isinf; using ::isfinite; using ::signbit;
}
