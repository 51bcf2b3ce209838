/*
 * mg_math.h -- what CUDA's device math library adds to C's <math.h>, for the mutagym CPU emulator.
 *
 * libstdc++'s <math.h> already supplies the C99 functions and their float overloads (exp(float),
 * ...). This header adds: CUDA's global min/max overload set (exactly CUDA's: there is no int/float
 * mix, so `max(0, x)` with a float x is ambiguous here as it is under nvcc), umin/umax/llmin/...,
 * rsqrt, rcbrt, sinpi/cospi/sincospi, erfinv/erfcinv, normcdf/normcdfinv, erfcx, norm3d/rnorm3d/
 * norm4d/rhypot/norm, fdividef, saturate, the IEEE round-to-nearest intrinsics (__fadd_rn, ...),
 * float/double <-> integer conversions with CUDA's saturation (NaN -> 0, out of range -> clamp),
 * bit casts, the CUDART_* constants of math_constants.h, and the fast intrinsics (__expf, ...).
 *
 * Accuracy:
 *  - The accurate functions are evaluated in double (float versions) or refined with Halley steps
 *    on libm's erf/erfc (erfinv family): within a few ulp, usually better than CUDA's bounds.
 *  - THE FAST INTRINSICS (__expf, __logf, __sinf, __fdividef, ...) REPRODUCE THE GPU'S REDUCED
 *    ACCURACY instead of calling the exact libm function: each models the PTX instruction it
 *    compiles to (see the comment on each), so a kernel whose correctness depends on an
 *    accuracy it does not have fails here as it would on a GPU. The models reproduce the error
 *    size and where it grows, not the GPU's exact bits.
 *  - Flush-to-zero is NOT modelled: the GPU's .approx.ftz instructions flush subnormal inputs and
 *    outputs to zero (e.g. __expf(-100) is 0 on a GPU, a subnormal here); CPU arithmetic keeps them.
 *  - FMA contraction of user code, as nvcc's default -fmad=true: kernels are built with
 *    -ffp-contract=fast (toolchain.KERNEL_FLAGS; off with MUTAGYM_FMA=0), so a product feeding an
 *    add or a subtract is one fused rounding, across statements. g++ fuses a product only when
 *    every use of it is an add or a subtract in the same basic block; NVVM fuses each such add
 *    whatever else uses the product, so a product also used otherwise (stored, compared, passed
 *    to a call) rounds twice here where a GPU may fuse. The intrinsics CUDA guarantees are never
 *    fused (__fadd_rn, __fsub_rn, __fmul_rn and their double forms) are kept unfused with opaque
 *    barriers (__mg_fbar); __fmaf_rn, __fma_rn, fmaf and fma are always fused.
 *
 * Linkage: names that glibc also declares (its internal aliases __expf, __sinf, ... and C23's
 * rsqrt, sinpi, cospi) are defined `extern "C" inline` with hidden visibility and noexcept, so they
 * agree with a glibc declaration whether or not one exists; everything else is static inline.
 */
#pragma once

#include <float.h>
#include <math.h>
#include <stdint.h>
#include "mg_types.h"

#define __MG_CFUNC extern "C" inline __attribute__((visibility("hidden")))

/* ------------------------------------------------------------------------------------------ */
/* Constants (math_constants.h)                                                               */
/* ------------------------------------------------------------------------------------------ */

#ifndef CUDART_INF_F
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("0x3fffff") /* bits 0x7fffffff, as CUDA's */
#define CUDART_MIN_DENORM_F 0x1p-149f
#define CUDART_MAX_NORMAL_F 0x1.fffffep127f
#define CUDART_NEG_ZERO_F (-0.0f)
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_SQRT_TWO_F 1.414213562f
#define CUDART_THIRD_F 0.333333333f
#define CUDART_PIO4_F 0.785398163f
#define CUDART_PIO2_F 1.570796327f
#define CUDART_3PIO4_F 2.356194490f
#define CUDART_2_OVER_PI_F 0.636619772f
#define CUDART_SQRT_2_OVER_PI_F 0.797884561f
#define CUDART_PI_F 3.141592654f
#define CUDART_L2E_F 1.442695041f
#define CUDART_L2T_F 3.321928094f
#define CUDART_LG2_F 0.301029996f
#define CUDART_LGE_F 0.434294482f
#define CUDART_LN2_F 0.693147181f
#define CUDART_LNT_F 2.302585093f
#define CUDART_LNPI_F 1.144729886f
#define CUDART_TWO_TO_M126_F 0x1p-126f
#define CUDART_TWO_TO_126_F 0x1p126f
#define CUDART_NORM_HUGE_F 0x1.fffffep127f
#define CUDART_TWO_TO_23_F 8388608.0f
#define CUDART_TWO_TO_24_F 16777216.0f
#define CUDART_TWO_TO_31_F 2147483648.0f
#define CUDART_TWO_TO_32_F 4294967296.0f
#define CUDART_TRIG_PLOSS_F 105615.0f
#endif
#ifndef CUDART_INF
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN (-__builtin_nan("")) /* bits 0xfff8000000000000, as CUDA's */
#define CUDART_NEG_ZERO (-0.0)
#define CUDART_MIN_DENORM 0x1p-1074
#define CUDART_ZERO 0.0
#define CUDART_ONE 1.0
#define CUDART_SQRT_TWO 1.4142135623730951
#define CUDART_SQRT_HALF 0.70710678118654757
#define CUDART_THIRD 0.33333333333333331
#define CUDART_TWOTHIRD 0.66666666666666663
#define CUDART_PIO4 0.78539816339744828
#define CUDART_PIO2 1.5707963267948966
#define CUDART_3PIO4 2.3561944901923448
#define CUDART_2_OVER_PI 0.63661977236758138
#define CUDART_PI 3.1415926535897931
#define CUDART_SQRT_2PI 2.5066282746310002
#define CUDART_SQRT_PIO2 1.2533141373155001
#define CUDART_SQRT_2OPI 0.79788456080286541
#define CUDART_L2E 1.4426950408889634
#define CUDART_L2T 3.3219280948873622
#define CUDART_LG2 0.30102999566398120
#define CUDART_LGE 0.43429448190325182
#define CUDART_LN2 0.69314718055994529
#define CUDART_LNT 2.3025850929940459
#define CUDART_LNPI 1.1447298858494002
#define CUDART_TWO_TO_23 8388608.0
#define CUDART_TWO_TO_52 4503599627370496.0
#define CUDART_TWO_TO_53 9007199254740992.0
#define CUDART_TWO_TO_54 18014398509481984.0
#define CUDART_TWO_TO_M54 0x1p-54
#define CUDART_TWO_TO_M1022 0x1p-1022
#define CUDART_TRIG_PLOSS 2147483648.0
#endif

/* ------------------------------------------------------------------------------------------ */
/* min / max: CUDA's overload set                                                             */
/* ------------------------------------------------------------------------------------------ */

#define __MG_MINMAX_INT(R, A, B)                                                                   \
    static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                            \
    static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
__MG_MINMAX_INT(int, int, int)
__MG_MINMAX_INT(unsigned int, unsigned int, unsigned int)
__MG_MINMAX_INT(unsigned int, int, unsigned int)   /* mixed signedness compares as unsigned, as C */
__MG_MINMAX_INT(unsigned int, unsigned int, int)
__MG_MINMAX_INT(long, long, long)
__MG_MINMAX_INT(unsigned long, unsigned long, unsigned long)
__MG_MINMAX_INT(unsigned long, long, unsigned long)
__MG_MINMAX_INT(unsigned long, unsigned long, long)
__MG_MINMAX_INT(long long, long long, long long)
__MG_MINMAX_INT(unsigned long long, unsigned long long, unsigned long long)
__MG_MINMAX_INT(unsigned long long, long long, unsigned long long)
__MG_MINMAX_INT(unsigned long long, unsigned long long, long long)
#undef __MG_MINMAX_INT

/* Floating min/max are fminf/fmaxf: a NaN operand yields the other operand. */
static inline float min(float a, float b) { return (a < b || b != b) ? a : b; }
static inline float max(float a, float b) { return (a > b || b != b) ? a : b; }
static inline double min(double a, double b) { return (a < b || b != b) ? a : b; }
static inline double max(double a, double b) { return (a > b || b != b) ? a : b; }
static inline double min(float a, double b) { return min((double)a, b); }
static inline double max(float a, double b) { return max((double)a, b); }
static inline double min(double a, float b) { return min(a, (double)b); }
static inline double max(double a, float b) { return max(a, (double)b); }

static inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline long long llmin(long long a, long long b) { return a < b ? a : b; }
static inline long long llmax(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

/* ------------------------------------------------------------------------------------------ */
/* Bit casts                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static inline float __int_as_float(int x) { return __mg_u2f((uint32_t)x); }
static inline int __float_as_int(float x) { return (int)__mg_f2u(x); }
static inline float __uint_as_float(unsigned int x) { return __mg_u2f(x); }
static inline unsigned int __float_as_uint(float x) { return __mg_f2u(x); }
static inline double __longlong_as_double(long long x) { return __mg_u2d((uint64_t)x); }
static inline long long __double_as_longlong(double x) { return (long long)__mg_d2u(x); }
static inline int __double2hiint(double x) { return (int)(uint32_t)(__mg_d2u(x) >> 32); }
static inline int __double2loint(double x) { return (int)(uint32_t)__mg_d2u(x); }
static inline double __hiloint2double(int hi, int lo) {
    return __mg_u2d(((uint64_t)(uint32_t)hi << 32) | (uint64_t)(uint32_t)lo);
}

/* ------------------------------------------------------------------------------------------ */
/* Conversions                                                                                */
/* ------------------------------------------------------------------------------------------ */

static inline float __mg_next_up(float f) {
    uint32_t u = __mg_f2u(f);
    if (f == 0.0f) return __mg_u2f(1u);
    return __mg_u2f(f > 0.0f ? u + 1u : u - 1u);
}
static inline float __mg_next_down(float f) {
    uint32_t u = __mg_f2u(f);
    if (f == 0.0f) return __mg_u2f(0x80000001u);
    return __mg_u2f(f > 0.0f ? u - 1u : u + 1u);
}
/* double -> float with mode 0 nearest-even, 1 toward zero, 2 down, 3 up. */
static inline float __mg_d2f_dir(double d, int mode) {
    float f = (float)d;
    if (mode == 0 || d != d || (double)f == d) return f;
    if (mode == 1) return ((double)f > d) == (d > 0.0) ? (d > 0.0 ? __mg_next_down(f) : __mg_next_up(f)) : f;
    if (mode == 2) return (double)f > d ? __mg_next_down(f) : f;
    return (double)f < d ? __mg_next_up(f) : f;
}

/* float/double -> integer: _rn nearest-even, _rz toward zero, _rd down, _ru up; saturating,
 * NaN -> 0 (PTX cvt.rni/rzi/rmi/rpi semantics). */
#define __MG_TOINT(name, S, R, sat)                                                                \
    static inline R name##_rn(S x) { return (R)sat(__mg_round_mode((double)x, 0)); }               \
    static inline R name##_rz(S x) { return (R)sat(__mg_round_mode((double)x, 1)); }               \
    static inline R name##_rd(S x) { return (R)sat(__mg_round_mode((double)x, 2)); }               \
    static inline R name##_ru(S x) { return (R)sat(__mg_round_mode((double)x, 3)); }
__MG_TOINT(__float2int, float, int, __mg_sat_i32)
__MG_TOINT(__float2uint, float, unsigned int, __mg_sat_u32)
__MG_TOINT(__float2ll, float, long long, __mg_sat_i64)
__MG_TOINT(__float2ull, float, unsigned long long, __mg_sat_u64)
__MG_TOINT(__double2int, double, int, __mg_sat_i32)
__MG_TOINT(__double2uint, double, unsigned int, __mg_sat_u32)
__MG_TOINT(__double2ll, double, long long, __mg_sat_i64)
__MG_TOINT(__double2ull, double, unsigned long long, __mg_sat_u64)
#undef __MG_TOINT

/* integer/double -> float, each rounding mode; 64-bit integers go through a round-to-odd double. */
#define __MG_TOFLOAT(name, S, TOD)                                                                 \
    static inline float name##_rn(S x) { return __mg_d2f_dir(TOD(x), 0); }                        \
    static inline float name##_rz(S x) { return __mg_d2f_dir(TOD(x), 1); }                        \
    static inline float name##_rd(S x) { return __mg_d2f_dir(TOD(x), 2); }                        \
    static inline float name##_ru(S x) { return __mg_d2f_dir(TOD(x), 3); }
#define __MG_EXACT_D(v) ((double)(v))
__MG_TOFLOAT(__int2float, int, __MG_EXACT_D)
__MG_TOFLOAT(__uint2float, unsigned int, __MG_EXACT_D)
__MG_TOFLOAT(__ll2float, long long, __mg_ll2d_odd)
__MG_TOFLOAT(__ull2float, unsigned long long, __mg_u64_to_d_odd)
__MG_TOFLOAT(__double2float, double, __MG_EXACT_D)
#undef __MG_EXACT_D
#undef __MG_TOFLOAT

static inline double __int2double_rn(int x) { return (double)x; }
static inline double __uint2double_rn(unsigned int x) { return (double)x; }
static inline double __ll2double_rn(long long x) { return (double)x; }
static inline double __ull2double_rn(unsigned long long x) { return (double)x; }

/* ------------------------------------------------------------------------------------------ */
/* IEEE round-to-nearest intrinsics: plain IEEE operations that are never contracted to FMA   */
/* ------------------------------------------------------------------------------------------ */

static inline float __fadd_rn(float a, float b) { return __mg_fbar(a) + __mg_fbar(b); }
static inline float __fsub_rn(float a, float b) { return __mg_fbar(a) - __mg_fbar(b); }
static inline float __fmul_rn(float a, float b) { return __mg_fbar(a * b); }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }
/* 1/sqrt(x) through double: correctly rounded except in (astronomically rare) double-rounding cases */
static inline float __frsqrt_rn(float x) { return (float)(1.0 / __builtin_sqrt((double)x)); }
static inline double __dadd_rn(double a, double b) { return __mg_dbar(a) + __mg_dbar(b); }
static inline double __dsub_rn(double a, double b) { return __mg_dbar(a) - __mg_dbar(b); }
static inline double __dmul_rn(double a, double b) { return __mg_dbar(a * b); }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __fma_rn(double a, double b, double c) { return __builtin_fma(a, b, c); }
static inline double __drcp_rn(double x) { return 1.0 / x; }
static inline double __dsqrt_rn(double x) { return __builtin_sqrt(x); }

/* ------------------------------------------------------------------------------------------ */
/* Functions CUDA adds to C's math library                                                    */
/* ------------------------------------------------------------------------------------------ */

#if !defined(__USE_GNU)
/* glibc declares exp10/exp10f/sincos/sincosf only under _GNU_SOURCE (which g++ always defines);
 * without it, local versions. The barrier on the cosine's argument keeps GCC from turning the
 * sin/cos pair back into a call to sincos. */
static inline float exp10f(float x) { return (float)exp((double)x * 2.302585092994045684); }
static inline double exp10(double x) { return pow(10.0, x); }
static inline void sincosf(float x, float *s, float *c) { *s = sinf(x); *c = cosf(__mg_fbar(x)); }
static inline void sincos(double x, double *s, double *c) { *s = sin(x); *c = cos(__mg_dbar(x)); }
#endif
static inline float exp10(float x) { return exp10f(x); }

__MG_CFUNC double rsqrt(double x) noexcept { return 1.0 / sqrt(x); }
__MG_CFUNC float rsqrtf(float x) noexcept { return (float)(1.0 / sqrt((double)x)); }
static inline float rsqrt(float x) { return rsqrtf(x); }
static inline double rcbrt(double x) { return 1.0 / cbrt(x); }
static inline float rcbrtf(float x) { return (float)(1.0 / cbrt((double)x)); }
static inline float rcbrt(float x) { return rcbrtf(x); }

/* sin(pi x), cos(pi x): exact reduction modulo 2 first, so integers give exact zeros and
 * half-integers exact +-1. */
static inline double __mg_sinpi_red(double r) { /* r in [-1, 1] */
    if (r > 0.5) r = 1.0 - r;
    else if (r < -0.5) r = -1.0 - r;
    return sin(3.141592653589793116 * r);
}
__MG_CFUNC double sinpi(double x) noexcept {
    if (x != x || x - x != 0.0) return x - x; /* NaN for NaN and infinities */
    double r = x - 2.0 * __builtin_rint(x * 0.5); /* exact, in [-1, 1] */
    double s = __mg_sinpi_red(r);
    return s == 0.0 ? __builtin_copysign(0.0, x) : s;
}
__MG_CFUNC double cospi(double x) noexcept {
    if (x != x || x - x != 0.0) return x - x;
    double a = __builtin_fabs(x);
    a = a - 2.0 * __builtin_rint(a * 0.5); /* exact, in [-1, 1] */
    a = __builtin_fabs(a);                 /* cos is even: [0, 1] */
    return __mg_sinpi_red(0.5 - a);        /* cos(pi a) = sin(pi (1/2 - a)) */
}
__MG_CFUNC float sinpif(float x) noexcept { return (float)sinpi((double)x); }
__MG_CFUNC float cospif(float x) noexcept { return (float)cospi((double)x); }
static inline float sinpi(float x) { return sinpif(x); }
static inline float cospi(float x) { return cospif(x); }
static inline void sincospi(double x, double *s, double *c) { *s = sinpi(x); *c = cospi(x); }
static inline void sincospif(float x, float *s, float *c) { *s = sinpif(x); *c = cospif(x); }

/* Inverse error functions. __mg_erfinv_pos(t, q) returns x >= 0 with erf(x) = t, where q = 1 - t
 * (q is exact whenever it is used, that is when t >= 0.5). Initial guess: the odd series at
 * small t, Winitzki's closed form elsewhere (relative error ~2e-3); then Halley steps on
 * erf(x) - t or, in the tail, on erfc(x) - q (cubic convergence: 3 steps reach double precision).
 * For f = erf(x) - t (or erfc(x) - q), f'' = -2x f', so a Halley step is f / (f' + x f). */
static inline double __mg_erfinv_pos(double t, double q) {
    double x;
    if (t < 0.1) {
        double t2 = t * t;
        x = 0.88622692545275801 * t *
            (1.0 + t2 * (0.26179938779914941 + t2 * (0.14393173084921979 + t2 * 0.097663619503920551)));
    } else {
        double L = log(q * (2.0 - q)); /* log(1 - t^2) */
        double A = 4.3307467508920624 + 0.5 * L; /* 2/(pi a) + L/2, a = 0.147 */
        x = sqrt(sqrt(A * A - L / 0.147) - A);
    }
    for (int i = 0; i < 4; ++i) {
        double d = 1.1283791670955126 * exp(-x * x); /* d/dx erf(x) */
        double f, fp;
        if (t < 0.5) { f = erf(x) - t; fp = d; }
        else { f = erfc(x) - q; fp = -d; }
        double den = fp + x * f;
        if (den == 0.0 || f == 0.0) break;
        double step = f / den;
        x -= step;
        if (__builtin_fabs(step) <= 1e-17 * x) break;
    }
    return x;
}
static inline double erfinv(double y) {
    if (y != y) return y;
    double t = __builtin_fabs(y);
    if (t > 1.0) return __builtin_nan("");
    if (t == 1.0) return __builtin_copysign(__builtin_huge_val(), y);
    if (t == 0.0) return y;
    double x = __mg_erfinv_pos(t, 1.0 - t);
    return y < 0 ? -x : x;
}
static inline double erfcinv(double y) {
    if (y != y) return y;
    if (y < 0.0 || y > 2.0) return __builtin_nan("");
    if (y == 0.0) return __builtin_huge_val();
    if (y == 2.0) return -__builtin_huge_val();
    if (y == 1.0) return 0.0;
    if (y < 1.0) return __mg_erfinv_pos(1.0 - y, y);
    double q = 2.0 - y; /* exact */
    return -__mg_erfinv_pos(1.0 - q, q);
}
static inline float erfinvf(float y) { return (float)erfinv((double)y); }
static inline float erfcinvf(float y) { return (float)erfcinv((double)y); }
static inline float erfinv(float y) { return erfinvf(y); }
static inline float erfcinv(float y) { return erfcinvf(y); }

/* Standard normal CDF and its inverse. The double version carries the rounding error of
 * -x/sqrt(2) as a first-order correction, which matters far in the lower tail. */
static inline double normcdf(double x) {
    if (x != x) return x;
    double z = -x * 0.70710678118654757;
    double zlo = __builtin_fma(-x, 0.70710678118654757, -z) + (-x) * -4.8336466567264567e-17;
    double r = erfc(z);
    if (r > 0.0 && z - z == 0.0) r -= zlo * 1.1283791670955126 * exp(-z * z);
    return 0.5 * r;
}
static inline float normcdff(float x) { return (float)(0.5 * erfc(-(double)x * 0.70710678118654757)); }
static inline double normcdfinv(double p) { return -1.4142135623730951 * erfcinv(2.0 * p); }
static inline float normcdfinvf(float p) { return (float)normcdfinv((double)p); }
static inline float normcdf(float x) { return normcdff(x); }
static inline float normcdfinv(float p) { return normcdfinvf(p); }

/* Scaled complementary error function exp(x^2) erfc(x). */
static inline double erfcx(double x) {
    if (x != x) return x;
    if (x < -26.7) return __builtin_huge_val(); /* 2 exp(x^2) overflows */
    if (x < 26.0) {
        double hi = x * x, lo = __builtin_fma(x, x, -hi); /* x^2 = hi + lo exactly */
        return exp(hi) * (1.0 + lo) * erfc(x);
    }
    /* asymptotic series: 1/(x sqrt(pi)) * sum (-1)^n (2n-1)!! / (2x^2)^n */
    double v = 0.5 / (x * x), term = 1.0, sum = 1.0;
    for (int n = 1; n <= 8; ++n) { term *= -(2.0 * n - 1.0) * v; sum += term; }
    return sum * 0.56418958354775628 / x;
}
static inline float erfcxf(float x) { return (float)erfcx((double)x); }
static inline float erfcx(float x) { return erfcxf(x); }

/* Norms (hypot-based: no intermediate overflow, an infinity wins over a NaN). */
static inline double rhypot(double a, double b) { return 1.0 / hypot(a, b); }
static inline float rhypotf(float a, float b) { return (float)(1.0 / hypot((double)a, (double)b)); }
static inline double norm3d(double a, double b, double c) { return hypot(hypot(a, b), c); }
static inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
static inline float norm3df(float a, float b, float c) { return (float)norm3d(a, b, c); }
static inline float rnorm3df(float a, float b, float c) { return (float)rnorm3d(a, b, c); }
static inline double norm4d(double a, double b, double c, double d) { return hypot(hypot(a, b), hypot(c, d)); }
static inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
static inline float norm4df(float a, float b, float c, float d) { return (float)norm4d(a, b, c, d); }
static inline float rnorm4df(float a, float b, float c, float d) { return (float)rnorm4d(a, b, c, d); }
static inline double norm(int dim, const double *p) {
    double r = 0.0;
    for (int i = 0; i < dim; ++i) r = hypot(r, p[i]);
    return r;
}
static inline double rnorm(int dim, const double *p) { return 1.0 / norm(dim, p); }
static inline float normf(int dim, const float *p) {
    double r = 0.0;
    for (int i = 0; i < dim; ++i) r = hypot(r, (double)p[i]);
    return (float)r;
}
static inline float rnormf(int dim, const float *p) {
    double r = 0.0;
    for (int i = 0; i < dim; ++i) r = hypot(r, (double)p[i]);
    return (float)(1.0 / r);
}

/* fdividef is IEEE division (it only maps to __fdividef under -use_fast_math). */
static inline float fdividef(float x, float y) { return x / y; }

/* Clamp to [0, 1]; NaN -> 0 (cvt.sat.f32). */
static inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }

/* ------------------------------------------------------------------------------------------ */
/* Fast intrinsics: GPU accuracy models                                                       */
/* ------------------------------------------------------------------------------------------ */

/* __fdividef(x, y): div.approx.f32 = x * rcp.approx(y). Modelled as x times the float-rounded
 * reciprocal (2 roundings, <= ~1.5 ulp; CUDA: 2 ulp for |y| in [2^-126, 2^126]). For
 * 2^126 < |y| < 2^128 the reciprocal is subnormal and flushed, so the result is 0 (NaN for
 * infinite x), exactly as the CUDA documentation states. */
static inline float __fdividef(float x, float y) {
    float ay = __builtin_fabsf(y);
    if (ay > 0x1p126f && ay <= FLT_MAX) return x * __builtin_copysignf(0.0f, y);
    return x * __mg_fbar(1.0f / y);
}

/* __expf(x): ex2.approx.ftz.f32(x * log2(e)) with the product rounded to float (mul.rn.f32 by
 * 0x3fb8aa3b). The rounded product's absolute error grows with |x|, so the relative error of the
 * result grows linearly in |x| (CUDA: 2 + floor(|1.173 x|) ulp). ex2.approx's own ~2 ulp error is
 * not modelled (exp2f here is accurate); neither is the flush of subnormal results. */
__MG_CFUNC float __expf(float x) noexcept { return exp2f(__mg_fbar(x * 1.44269502162933350f)); }

/* __exp10f(x): ex2.approx.ftz.f32(x * log2(10)), product rounded to float (0x40549a78). */
__MG_CFUNC float __exp10f(float x) noexcept { return exp2f(__mg_fbar(x * 3.32192802429199219f)); }

/* __log2f(x): lg2.approx.ftz.f32. Its error is absolute near 1 (CUDA: 2^-22 for x in [0.5, 2],
 * 2 ulp elsewhere): the hardware works on the significand in fixed point, and below 1 the
 * exponent cancels against it. Modelled by log2f with the result quantised to a multiple of 2^-24
 * for x in [0.5, 2] (absolute error about 2^-25, which keeps __log10f inside its documented 2^-24),
 * so e.g. __logf(1 + 1e-6) is a few percent off, where logf is exact to an ulp. */
__MG_CFUNC float __log2f(float x) noexcept {
    float l = log2f(x);
    if (x >= 0.5f && x <= 2.0f) l = (float)(__builtin_rint((double)l * 16777216.0) * (1.0 / 16777216.0));
    return l;
}
/* __logf(x) = lg2.approx(x) * ln(2), product rounded to float (0x3f317218). CUDA: absolute error
 * 2^-21.41 in [0.5, 2], 3 ulp elsewhere. */
__MG_CFUNC float __logf(float x) noexcept { return __mg_fbar(__log2f(x)) * 0.693147182464599609f; }
/* __log10f(x) = lg2.approx(x) * log10(2), product rounded to float (0x3e9a209b). */
__MG_CFUNC float __log10f(float x) noexcept { return __mg_fbar(__log2f(x)) * 0.301030009984970093f; }
/* __powf(x, y) = ex2.approx(y * lg2.approx(x)), float-rounded product: the error grows with
 * |y log2 x|; negative x gives NaN (as on a GPU). */
__MG_CFUNC float __powf(float x, float y) noexcept { return exp2f(__mg_fbar(y * __log2f(x))); }

/* __sinf/__cosf: sin.approx.f32/cos.approx.f32, which the GPU runs as a float multiply by 1/(2 pi)
 * (0x3e22f983) followed by MUFU.SIN/COS on the fraction of a revolution. Modelled as:
 * t = x * 0x3e22f983 rounded to float, the exact sine/cosine of 2 pi frac(t), quantised to a
 * multiple of 2^-24. Inside [-pi, pi] the reduction (the constant's error plus t's rounding)
 * costs up to ~3.1e-7 and the quantisation 3e-8: within CUDA's 2^-21.41 (3.6e-7). Outside, the
 * float reduction loses about |x| * 1e-7 of the angle, so the error grows with |x| as on a GPU;
 * results below 2^-25 in magnitude become 0. */
static inline float __mg_sincos_rev(float x, int want_cos) {
    float t = __mg_fbar(x * 0.159154936671257019043f);
    double fr = (double)t - __builtin_rint((double)t); /* exact, in [-0.5, 0.5] */
    double a = fr * 6.283185307179586477;
    double v = want_cos ? cos(a) : sin(a);
    return (float)(__builtin_rint(v * 16777216.0) * (1.0 / 16777216.0));
}
__MG_CFUNC float __sinf(float x) noexcept { return __mg_sincos_rev(x, 0); }
__MG_CFUNC float __cosf(float x) noexcept { return __mg_sincos_rev(x, 1); }
__MG_CFUNC void __sincosf(float x, float *s, float *c) noexcept { *s = __sinf(x); *c = __cosf(x); }
/* __tanf(x) = __fdividef(__sinf(x), __cosf(x)), as CUDA implements it. */
__MG_CFUNC float __tanf(float x) noexcept { return __fdividef(__sinf(x), __cosf(x)); }
