/*
 * mg_half.h -- __half / __half2 for the mutagym CPU emulator (emulates cuda_fp16.h).
 *
 * Storage is the IEEE binary16 bit pattern (member __x; public here, protected in CUDA).
 * Conversions are done with integer bit manipulation (no F16C): float->half rounds to nearest even
 * with correct subnormals, overflow to infinity and NaN -> canonical NaN 0x7fff (as cvt.rn.f16.f32);
 * half->float is exact. double->half and integer->half round once (via a round-to-odd float),
 * so there is no double-rounding error.
 *
 * The conversion set mirrors CUDA's so that overload resolution accepts and rejects the same code:
 * implicit constructors from float, double and every integer type, implicit conversions to float,
 * bool and every integer type (toward zero, saturating), explicit conversion from __nv_bfloat16.
 * As with nvcc, `h * 2.0f` and `floatvar += h` are ambiguous; write __half2float(h) * 2.0f.
 *
 * Numerics versus a GPU (sm_53+):
 *  - + - * / and sqrt are computed in float and rounded once to half: correctly rounded, like the
 *    GPU's native half instructions (float has 24 >= 2*11+2 bits, so double rounding is harmless).
 *  - __hfma is computed in double with a round-to-odd fix-up: a single correct rounding, as HFMA2.
 *  - `a * b + c` on __half / __half2 operators is contracted to __hfma, as ptxas does under nvcc's
 *    default -fmad=true (see "FMA contraction of the __half operators" below for what is modelled).
 *  - hexp, hlog, hsin, ... are computed in double and rounded once (correctly rounded in practice);
 *    the GPU's versions use approximate MUFU instructions and can be about 1 half ulp off.
 *  - Half subnormals are kept (the GPU keeps them too for half arithmetic).
 *  - volatile __half is not supported (its copy constructor would make __half non-trivial).
 *  - __shfl*_sync overloads for __half live with the shuffle implementation, not here.
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include "mg_types.h"

/* ------------------------------------------------------------------------------------------ */
/* Bit-level conversions                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* float -> binary16 bits. mode: 0 nearest-even, 1 toward zero, 2 down, 3 up. */
static inline unsigned short __mg_f2h_bits(float f, int mode) {
    uint32_t u = __mg_f2u(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* infinity keeps its sign; every NaN becomes the canonical 0x7fff */
        return (unsigned short)(a == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu);
    uint32_t h, rem, halfway; /* truncated magnitude, discarded part, half an ulp of the result */
    if (a >= 0x47800000u) {          /* >= 65536: past the largest finite half (65504) */
        h = 0x7bffu; rem = 2u; halfway = 1u;   /* "more than half an ulp above max finite" */
    } else if (a >= 0x38800000u) {   /* >= 2^-14: normal half; rebias the exponent 127 -> 15 */
        uint32_t r = a - 0x38000000u;
        h = r >> 13; rem = r & 0x1fffu; halfway = 0x1000u;
    } else {                         /* subnormal half (units of 2^-24) or zero */
        uint32_t e = a >> 23;
        if (e < 102u) {              /* below 2^-25: rounds to zero unless rounding away */
            h = 0u; rem = (a != 0u) ? 1u : 0u; halfway = 2u;
        } else {
            uint32_t m = (a & 0x7fffffu) | 0x800000u;
            uint32_t shift = 126u - e; /* 14 .. 24 */
            h = m >> shift; rem = m & ((1u << shift) - 1u); halfway = 1u << (shift - 1u);
        }
    }
    uint32_t inc;
    switch (mode) {
    case 1: inc = 0u; break;
    case 2: inc = (rem != 0u && sign) ? 1u : 0u; break;
    case 3: inc = (rem != 0u && !sign) ? 1u : 0u; break;
    default: inc = (rem > halfway || (rem == halfway && (h & 1u))) ? 1u : 0u; break;
    }
    return (unsigned short)(sign | (h + inc)); /* a carry runs into the exponent (up to inf) */
}

/* binary16 bits -> float, exact (NaN payloads are kept). */
static inline float __mg_h2f(unsigned short hb) {
    uint32_t sign = ((uint32_t)hb & 0x8000u) << 16;
    uint32_t e = ((uint32_t)hb >> 10) & 0x1fu;
    uint32_t m = (uint32_t)hb & 0x3ffu;
    if (e == 0x1fu) return __mg_u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0u) return __mg_u2f(sign | __mg_f2u((float)m * 5.9604644775390625e-08f)); /* m * 2^-24 */
    return __mg_u2f(sign | ((e + 112u) << 23) | (m << 13));
}

static inline unsigned short __mg_d2h_bits(double d, int mode) { return __mg_f2h_bits(__mg_d2f_odd(d), mode); }

/* a*b+c for operands with at most 11 (half) or 8 (bf16) significand bits: the product is exact
 * in double; the sum's rounding error is recovered (TwoSum) and folded into the last bit
 * (round to odd), so one more rounding to half/bf16 is correct. */
static inline double __mg_fma_odd(double a, double b, double c) {
    double p = __mg_dbar(a * b);
    double s = p + c;
    if (s - s == 0.0) { /* finite */
        double bb = s - p;
        double err = (p - (s - bb)) + (c - bb);
        if (err != 0.0) {
            uint64_t u = __mg_d2u(s);
            if ((u & 1u) == 0u) u = ((err > 0.0) == (s > 0.0)) ? u + 1u : u - 1u;
            s = __mg_u2d(u);
        }
    }
    return s;
}

/* ------------------------------------------------------------------------------------------ */
/* Types                                                                                      */
/* ------------------------------------------------------------------------------------------ */

struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat16;

struct alignas(2) __half {
    unsigned short __x;

    __half() = default;
    constexpr __half(const __half_raw &r) : __x(r.x) {}
    __half(float f) : __x(__mg_f2h_bits(f, 0)) {}
    __half(double d) : __x(__mg_d2h_bits(d, 0)) {}
    __half(short v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(unsigned short v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(int v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(unsigned int v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(long v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(unsigned long v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(long long v) : __x(__mg_d2h_bits((double)v, 0)) {}
    __half(unsigned long long v) : __x(__mg_d2h_bits((double)v, 0)) {}
    explicit inline __half(const __nv_bfloat16 &b); /* defined in mg_bf16.h */

    operator __half_raw() const { return __half_raw{__x}; }
    operator float() const { return __mg_h2f(__x); }
    /* Integer conversions truncate toward zero and saturate (NaN -> 0), as CUDA's _rz ones. */
    operator signed char() const { return (signed char)__mg_sat_range(__builtin_trunc((double)__mg_h2f(__x)), -128.0, 127.0); }
    operator unsigned char() const { return (unsigned char)__mg_sat_range(__builtin_trunc((double)__mg_h2f(__x)), 0.0, 255.0); }
    operator char() const { return (char)__mg_sat_range(__builtin_trunc((double)__mg_h2f(__x)), ((char)-1 < 0) ? -128.0 : 0.0, ((char)-1 < 0) ? 127.0 : 255.0); }
    operator short() const { return (short)__mg_sat_range(__builtin_trunc((double)__mg_h2f(__x)), -32768.0, 32767.0); }
    operator unsigned short() const { return (unsigned short)__mg_sat_range(__builtin_trunc((double)__mg_h2f(__x)), 0.0, 65535.0); }
    operator int() const { return __mg_sat_i32(__builtin_trunc((double)__mg_h2f(__x))); }
    operator unsigned int() const { return __mg_sat_u32(__builtin_trunc((double)__mg_h2f(__x))); }
    operator long() const { return (long)__mg_sat_i64(__builtin_trunc((double)__mg_h2f(__x))); }
    operator unsigned long() const { return (unsigned long)__mg_sat_u64(__builtin_trunc((double)__mg_h2f(__x))); }
    operator long long() const { return __mg_sat_i64(__builtin_trunc((double)__mg_h2f(__x))); }
    operator unsigned long long() const { return __mg_sat_u64(__builtin_trunc((double)__mg_h2f(__x))); }
    operator bool() const { return (__x & 0x7fffu) != 0u; }
};

struct alignas(4) __half2 {
    __half x, y;

    __half2() = default;
    constexpr __half2(const __half &a, const __half &b) : x(a), y(b) {}
    constexpr __half2(const __half2_raw &r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
    operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};

typedef __half half;
typedef __half2 half2;

/* ------------------------------------------------------------------------------------------ */
/* Conversions                                                                                */
/* ------------------------------------------------------------------------------------------ */

static inline __half __ushort_as_half(unsigned short v) { return __half(__half_raw{v}); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __short_as_half(short v) { return __ushort_as_half((unsigned short)v); }
static inline short __half_as_short(__half h) { return (short)h.__x; }

static inline __half __float2half(float f) { return __ushort_as_half(__mg_f2h_bits(f, 0)); }
static inline __half __float2half_rn(float f) { return __ushort_as_half(__mg_f2h_bits(f, 0)); }
static inline __half __float2half_rz(float f) { return __ushort_as_half(__mg_f2h_bits(f, 1)); }
static inline __half __float2half_rd(float f) { return __ushort_as_half(__mg_f2h_bits(f, 2)); }
static inline __half __float2half_ru(float f) { return __ushort_as_half(__mg_f2h_bits(f, 3)); }
static inline float __half2float(__half h) { return __mg_h2f(h.__x); }
static inline __half __double2half(double d) { return __ushort_as_half(__mg_d2h_bits(d, 0)); }
static inline __half __mg_d2h(double d) { return __ushort_as_half(__mg_d2h_bits(d, 0)); }

#define __MG_INT2HALF(name, T)                                                                 \
    static inline __half name##_rn(T v) { return __ushort_as_half(__mg_d2h_bits((double)v, 0)); } \
    static inline __half name##_rz(T v) { return __ushort_as_half(__mg_d2h_bits((double)v, 1)); } \
    static inline __half name##_rd(T v) { return __ushort_as_half(__mg_d2h_bits((double)v, 2)); } \
    static inline __half name##_ru(T v) { return __ushort_as_half(__mg_d2h_bits((double)v, 3)); }
__MG_INT2HALF(__int2half, int)
__MG_INT2HALF(__uint2half, unsigned int)
__MG_INT2HALF(__short2half, short)
__MG_INT2HALF(__ushort2half, unsigned short)
__MG_INT2HALF(__ll2half, long long)   /* |v| >= 2^53 is far past 65504: the result is inf/max */
__MG_INT2HALF(__ull2half, unsigned long long)
#undef __MG_INT2HALF

#define __MG_HALF2INT(name, R, sat)                                                            \
    static inline R name##_rn(__half h) { return (R)sat(__mg_round_mode(__mg_h2f(h.__x), 0)); } \
    static inline R name##_rz(__half h) { return (R)sat(__mg_round_mode(__mg_h2f(h.__x), 1)); } \
    static inline R name##_rd(__half h) { return (R)sat(__mg_round_mode(__mg_h2f(h.__x), 2)); } \
    static inline R name##_ru(__half h) { return (R)sat(__mg_round_mode(__mg_h2f(h.__x), 3)); }
__MG_HALF2INT(__half2int, int, __mg_sat_i32)
__MG_HALF2INT(__half2uint, unsigned int, __mg_sat_u32)
__MG_HALF2INT(__half2ll, long long, __mg_sat_i64)
__MG_HALF2INT(__half2ull, unsigned long long, __mg_sat_u64)
#undef __MG_HALF2INT
static inline short __half2short_rn(__half h) { return (short)__mg_sat_range(__mg_round_mode(__mg_h2f(h.__x), 0), -32768.0, 32767.0); }
static inline unsigned short __half2ushort_rn(__half h) { return (unsigned short)__mg_sat_range(__mg_round_mode(__mg_h2f(h.__x), 0), 0.0, 65535.0); }
static inline short __half2short_rz(__half h) { return (short)h; }
static inline unsigned short __half2ushort_rz(__half h) { return (unsigned short)h; }
static inline signed char __half2char_rz(__half h) { return (signed char)h; }
static inline unsigned char __half2uchar_rz(__half h) { return (unsigned char)h; }

/* half2 packing */
static inline __half2 make_half2(__half x, __half y) { return __half2(x, y); }
static inline __half2 __halves2half2(__half lo, __half hi) { return __half2(lo, hi); }
static inline __half2 __half2half2(__half h) { return __half2(h, h); }
static inline __half2 __float2half2_rn(float f) { return __half2(__float2half(f), __float2half(f)); }
static inline __half2 __floats2half2_rn(float lo, float hi) { return __half2(__float2half(lo), __float2half(hi)); }
static inline __half2 __float22half2_rn(float2 f) { return __half2(__float2half(f.x), __float2half(f.y)); }
static inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline float __low2float(__half2 h) { return __half2float(h.x); }
static inline float __high2float(__half2 h) { return __half2float(h.y); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
static inline __half2 __low2half2(__half2 h) { return __half2(h.x, h.x); }
static inline __half2 __high2half2(__half2 h) { return __half2(h.y, h.y); }
static inline __half2 __lowhigh2highlow(__half2 h) { return __half2(h.y, h.x); }

/* ------------------------------------------------------------------------------------------ */
/* Arithmetic, comparisons, math and operators: shared by __half and __nv_bfloat16            */
/* ------------------------------------------------------------------------------------------ */
/* T: scalar type, T2: pair type, TOF(x): exact T->float, FROMF(f)/FROMD(d): correctly rounded
 * float/double -> T, BITS(u): T from bits, INF: bits of +infinity. Canonical NaN is 0x7fff
 * for both formats. */
#define __MG_DEFINE_16BIT_OPS(T, T2, TOF, FROMF, FROMD, BITS, INF)                                \
    static inline T __hadd(T a, T b) { return FROMF(TOF(a) + TOF(b)); }                            \
    static inline T __hsub(T a, T b) { return FROMF(TOF(a) - TOF(b)); }                            \
    static inline T __hmul(T a, T b) { return FROMF(TOF(a) * TOF(b)); }                            \
    static inline T __hdiv(T a, T b) { return FROMF(TOF(a) / TOF(b)); }                            \
    static inline T __hadd_rn(T a, T b) { return __hadd(a, b); }                                   \
    static inline T __hsub_rn(T a, T b) { return __hsub(a, b); }                                   \
    static inline T __hmul_rn(T a, T b) { return __hmul(a, b); }                                   \
    static inline T __hneg(T a) { return BITS((unsigned short)(a.__x ^ 0x8000u)); }               \
    static inline T __habs(T a) { return BITS((unsigned short)(a.__x & 0x7fffu)); }               \
    static inline T __hfma(T a, T b, T c) {                                                        \
        return FROMD(__mg_fma_odd((double)TOF(a), (double)TOF(b), (double)TOF(c)));               \
    }                                                                                              \
    static inline bool __hisnan(T a) { return (a.__x & 0x7fffu) > (INF); }                         \
    static inline int __hisinf(T a) {                                                              \
        return (a.__x & 0x7fffu) != (INF) ? 0 : ((a.__x & 0x8000u) ? -1 : 1);                     \
    }                                                                                              \
    static inline T __mg_sat01(T a) { /* clamp to [0, 1], NaN -> +0 */                             \
        float f = TOF(a);                                                                          \
        return f >= 1.0f ? FROMF(1.0f) : (f > 0.0f ? a : BITS(0));                                 \
    }                                                                                              \
    static inline T __hadd_sat(T a, T b) { return __mg_sat01(__hadd(a, b)); }                      \
    static inline T __hsub_sat(T a, T b) { return __mg_sat01(__hsub(a, b)); }                      \
    static inline T __hmul_sat(T a, T b) { return __mg_sat01(__hmul(a, b)); }                      \
    static inline T __hfma_sat(T a, T b, T c) { return __mg_sat01(__hfma(a, b, c)); }             \
    static inline T __hfma_relu(T a, T b, T c) {                                                   \
        T r = __hfma(a, b, c);                                                                     \
        if (__hisnan(r)) return BITS(0x7fff);                                                      \
        return TOF(r) < 0.0f ? BITS(0) : r;                                                        \
    }                                                                                              \
    /* max/min: a NaN operand yields the other one (canonical NaN if both), +0 > -0 */            \
    static inline T __hmax(T a, T b) {                                                             \
        if (__hisnan(a)) return __hisnan(b) ? BITS(0x7fff) : b;                                    \
        if (__hisnan(b)) return a;                                                                 \
        float fa = TOF(a), fb = TOF(b);                                                            \
        if (fa == fb) return (a.__x & 0x8000u) ? b : a;                                            \
        return fa > fb ? a : b;                                                                    \
    }                                                                                              \
    static inline T __hmin(T a, T b) {                                                             \
        if (__hisnan(a)) return __hisnan(b) ? BITS(0x7fff) : b;                                    \
        if (__hisnan(b)) return a;                                                                 \
        float fa = TOF(a), fb = TOF(b);                                                            \
        if (fa == fb) return (a.__x & 0x8000u) ? a : b;                                            \
        return fa < fb ? a : b;                                                                    \
    }                                                                                              \
    static inline T __hmax_nan(T a, T b) {                                                         \
        return (__hisnan(a) || __hisnan(b)) ? BITS(0x7fff) : __hmax(a, b);                         \
    }                                                                                              \
    static inline T __hmin_nan(T a, T b) {                                                         \
        return (__hisnan(a) || __hisnan(b)) ? BITS(0x7fff) : __hmin(a, b);                         \
    }                                                                                              \
    /* ordered comparisons (false if either is NaN) and unordered ones (true if either is NaN) */  \
    static inline bool __heq(T a, T b) { return TOF(a) == TOF(b); }                                \
    static inline bool __hne(T a, T b) { return TOF(a) < TOF(b) || TOF(a) > TOF(b); }             \
    static inline bool __hlt(T a, T b) { return TOF(a) < TOF(b); }                                 \
    static inline bool __hle(T a, T b) { return TOF(a) <= TOF(b); }                                \
    static inline bool __hgt(T a, T b) { return TOF(a) > TOF(b); }                                 \
    static inline bool __hge(T a, T b) { return TOF(a) >= TOF(b); }                                \
    static inline bool __hequ(T a, T b) { return !(TOF(a) < TOF(b) || TOF(a) > TOF(b)); }         \
    static inline bool __hneu(T a, T b) { return !(TOF(a) == TOF(b)); }                            \
    static inline bool __hltu(T a, T b) { return !(TOF(a) >= TOF(b)); }                            \
    static inline bool __hleu(T a, T b) { return !(TOF(a) > TOF(b)); }                             \
    static inline bool __hgtu(T a, T b) { return !(TOF(a) <= TOF(b)); }                            \
    static inline bool __hgeu(T a, T b) { return !(TOF(a) < TOF(b)); }                             \
    /* math: evaluated in double, rounded once */                                                  \
    static inline T hexp(T a) { return FROMD(exp((double)TOF(a))); }                               \
    static inline T hexp2(T a) { return FROMD(exp2((double)TOF(a))); }                             \
    static inline T hexp10(T a) { return FROMD(exp((double)TOF(a) * 2.302585092994045684)); }      \
    static inline T hlog(T a) { return FROMD(log((double)TOF(a))); }                               \
    static inline T hlog2(T a) { return FROMD(log2((double)TOF(a))); }                             \
    static inline T hlog10(T a) { return FROMD(log10((double)TOF(a))); }                           \
    static inline T hsqrt(T a) { return FROMF(sqrtf(TOF(a))); }                                    \
    static inline T hrsqrt(T a) { return FROMD(1.0 / sqrt((double)TOF(a))); }                      \
    static inline T hrcp(T a) { return FROMD(1.0 / (double)TOF(a)); }                              \
    static inline T hsin(T a) { return FROMD(sin((double)TOF(a))); }                               \
    static inline T hcos(T a) { return FROMD(cos((double)TOF(a))); }                               \
    static inline T htanh(T a) { return FROMD(tanh((double)TOF(a))); }                             \
    static inline T hfloor(T a) { return FROMF(floorf(TOF(a))); }                                  \
    static inline T hceil(T a) { return FROMF(ceilf(TOF(a))); }                                    \
    static inline T htrunc(T a) { return FROMF(truncf(TOF(a))); }                                  \
    static inline T hrint(T a) { return FROMF(rintf(TOF(a))); }                                    \
    /* operators */                                                                                \
    static inline T operator+(const T &a, const T &b) { return __hadd(a, b); }                     \
    static inline T operator-(const T &a, const T &b) { return __hsub(a, b); }                     \
    static inline T operator/(const T &a, const T &b) { return __hdiv(a, b); }                     \
    static inline T &operator+=(T &a, const T &b) { a = __hadd(a, b); return a; }                  \
    static inline T &operator-=(T &a, const T &b) { a = __hsub(a, b); return a; }                  \
    static inline T &operator*=(T &a, const T &b) { a = __hmul(a, b); return a; }                  \
    static inline T &operator/=(T &a, const T &b) { a = __hdiv(a, b); return a; }                  \
    static inline T operator+(const T &a) { return a; }                                            \
    static inline T operator-(const T &a) { return __hneg(a); }                                    \
    static inline T &operator++(T &a) { a = __hadd(a, FROMF(1.0f)); return a; }                    \
    static inline T &operator--(T &a) { a = __hsub(a, FROMF(1.0f)); return a; }                    \
    static inline T operator++(T &a, int) { T old = a; a = __hadd(a, FROMF(1.0f)); return old; }  \
    static inline T operator--(T &a, int) { T old = a; a = __hsub(a, FROMF(1.0f)); return old; }  \
    static inline bool operator==(const T &a, const T &b) { return __heq(a, b); }                  \
    static inline bool operator!=(const T &a, const T &b) { return __hneu(a, b); }                 \
    static inline bool operator<(const T &a, const T &b) { return __hlt(a, b); }                   \
    static inline bool operator<=(const T &a, const T &b) { return __hle(a, b); }                  \
    static inline bool operator>(const T &a, const T &b) { return __hgt(a, b); }                   \
    static inline bool operator>=(const T &a, const T &b) { return __hge(a, b); }                  \
    /* pairs: lane-wise */                                                                         \
    static inline T2 __hadd2(T2 a, T2 b) { return T2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }        \
    static inline T2 __hsub2(T2 a, T2 b) { return T2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }        \
    static inline T2 __hmul2(T2 a, T2 b) { return T2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }        \
    static inline T2 __h2div(T2 a, T2 b) { return T2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }        \
    static inline T2 __hadd2_rn(T2 a, T2 b) { return __hadd2(a, b); }                              \
    static inline T2 __hsub2_rn(T2 a, T2 b) { return __hsub2(a, b); }                              \
    static inline T2 __hmul2_rn(T2 a, T2 b) { return __hmul2(a, b); }                              \
    static inline T2 __hfma2(T2 a, T2 b, T2 c) {                                                   \
        return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));                                   \
    }                                                                                              \
    static inline T2 __hadd2_sat(T2 a, T2 b) { return T2(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); } \
    static inline T2 __hsub2_sat(T2 a, T2 b) { return T2(__hsub_sat(a.x, b.x), __hsub_sat(a.y, b.y)); } \
    static inline T2 __hmul2_sat(T2 a, T2 b) { return T2(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); } \
    static inline T2 __hfma2_sat(T2 a, T2 b, T2 c) {                                               \
        return T2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y));                           \
    }                                                                                              \
    static inline T2 __hfma2_relu(T2 a, T2 b, T2 c) {                                              \
        return T2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y));                         \
    }                                                                                              \
    static inline T2 __hneg2(T2 a) { return T2(__hneg(a.x), __hneg(a.y)); }                        \
    static inline T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                        \
    static inline T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }        \
    static inline T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }        \
    static inline T2 __hmax2_nan(T2 a, T2 b) { return T2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); } \
    static inline T2 __hmin2_nan(T2 a, T2 b) { return T2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); } \
    static inline T2 __hisnan2(T2 a) {                                                             \
        return T2(FROMF(__hisnan(a.x) ? 1.0f : 0.0f), FROMF(__hisnan(a.y) ? 1.0f : 0.0f));         \
    }                                                                                              \
    __MG_CMP2(T, T2, FROMF, eq) __MG_CMP2(T, T2, FROMF, ne) __MG_CMP2(T, T2, FROMF, lt)            \
    __MG_CMP2(T, T2, FROMF, le) __MG_CMP2(T, T2, FROMF, gt) __MG_CMP2(T, T2, FROMF, ge)            \
    __MG_CMP2(T, T2, FROMF, equ) __MG_CMP2(T, T2, FROMF, neu) __MG_CMP2(T, T2, FROMF, ltu)         \
    __MG_CMP2(T, T2, FROMF, leu) __MG_CMP2(T, T2, FROMF, gtu) __MG_CMP2(T, T2, FROMF, geu)         \
    __MG_MATH2(T2, exp) __MG_MATH2(T2, exp2) __MG_MATH2(T2, exp10) __MG_MATH2(T2, log)             \
    __MG_MATH2(T2, log2) __MG_MATH2(T2, log10) __MG_MATH2(T2, sqrt) __MG_MATH2(T2, rsqrt)          \
    __MG_MATH2(T2, rcp) __MG_MATH2(T2, sin) __MG_MATH2(T2, cos) __MG_MATH2(T2, tanh)               \
    __MG_MATH2(T2, floor) __MG_MATH2(T2, ceil) __MG_MATH2(T2, trunc) __MG_MATH2(T2, rint)          \
    static inline T2 operator+(const T2 &a, const T2 &b) { return __hadd2(a, b); }                 \
    static inline T2 operator-(const T2 &a, const T2 &b) { return __hsub2(a, b); }                 \
    static inline T2 operator/(const T2 &a, const T2 &b) { return __h2div(a, b); }                 \
    static inline T2 &operator+=(T2 &a, const T2 &b) { a = __hadd2(a, b); return a; }              \
    static inline T2 &operator-=(T2 &a, const T2 &b) { a = __hsub2(a, b); return a; }              \
    static inline T2 &operator*=(T2 &a, const T2 &b) { a = __hmul2(a, b); return a; }              \
    static inline T2 &operator/=(T2 &a, const T2 &b) { a = __h2div(a, b); return a; }              \
    static inline T2 operator+(const T2 &a) { return a; }                                          \
    static inline T2 operator-(const T2 &a) { return __hneg2(a); }                                 \
    /* operator* (T and T2): __MG_PLAIN_MUL_OPS, or the contracted model below for __half */        \
    static inline T2 &operator++(T2 &a) { a = __hadd2(a, T2(FROMF(1.0f), FROMF(1.0f))); return a; } \
    static inline T2 &operator--(T2 &a) { a = __hsub2(a, T2(FROMF(1.0f), FROMF(1.0f))); return a; } \
    static inline T2 operator++(T2 &a, int) { T2 old = a; ++a; return old; }                       \
    static inline T2 operator--(T2 &a, int) { T2 old = a; --a; return old; }                       \
    static inline bool operator==(const T2 &a, const T2 &b) { return __hbeq2(a, b); }              \
    static inline bool operator!=(const T2 &a, const T2 &b) { return __hbneu2(a, b); }             \
    static inline bool operator<(const T2 &a, const T2 &b) { return __hblt2(a, b); }               \
    static inline bool operator<=(const T2 &a, const T2 &b) { return __hble2(a, b); }              \
    static inline bool operator>(const T2 &a, const T2 &b) { return __hbgt2(a, b); }               \
    static inline bool operator>=(const T2 &a, const T2 &b) { return __hbge2(a, b); }

/* Lane-wise comparison: __h<op>2 gives 1.0/0.0 per lane, __hb<op>2 is true iff both lanes are. */
#define __MG_CMP2(T, T2, FROMF, op)                                                                \
    static inline T2 __h##op##2(T2 a, T2 b) {                                                      \
        return T2(FROMF(__h##op(a.x, b.x) ? 1.0f : 0.0f), FROMF(__h##op(a.y, b.y) ? 1.0f : 0.0f)); \
    }                                                                                              \
    static inline bool __hb##op##2(T2 a, T2 b) { return __h##op(a.x, b.x) && __h##op(a.y, b.y); }
#define __MG_MATH2(T2, fn)                                                                         \
    static inline T2 h2##fn(T2 a) { return T2(h##fn(a.x), h##fn(a.y)); }

__MG_DEFINE_16BIT_OPS(__half, __half2, __half2float, __float2half, __mg_d2h, __ushort_as_half, 0x7c00u)

/* The product operators, never contracted. */
#define __MG_PLAIN_MUL_OPS(T, T2)                                                                  \
    static inline T operator*(const T &a, const T &b) { return __hmul(a, b); }                     \
    static inline T2 operator*(const T2 &a, const T2 &b) { return __hmul2(a, b); }

/* FMA contraction of the __half operators (kernels are built with __MG_FP_CONTRACT unless
 * MUTAGYM_FMA=0, as nvcc's default -fmad=true). cuda_fp16.hpp's operators call __hmul / __hadd /
 * __hsub, which are mul.f16 / add.f16 / sub.f16 (and .f16x2) without a rounding modifier, and
 * ptxas contracts such a multiply feeding an add into one fma.rn.f16 (HFMA2): a single rounding.
 * Modelled on the operators: `a * b` is a __mg_hprod (__mg_hprod2), a __half (__half2) holding
 * the rounded product, usable wherever one is, that also keeps its operands; `p + c`, `c + p`,
 * `p - c`, `c - p`, `c += p`, `c -= p` and `-p` then take the product unrounded (__hfma, one
 * rounding). Of two products (`a*b + c*d`) the left one is fused and the right one rounded, as
 * g++ contracts float code. A product changed through a __half& (`auto p = a * b; p += c;`) no
 * longer equals its operands' product and is then added as it is, unfused.
 * Not modelled (rounded twice here, where ptxas may fuse): a product first stored in a declared
 * __half (`__half p = a * b; p + c`), and the intrinsics called by name (`__hadd(__hmul(a, b),
 * c)`). Never contracted, here as on a GPU: __hmul_rn / __hadd_rn / __hsub_rn (CUDA: "prevents
 * floating-point contractions of mul+add into fma"), atomicAdd, and __nv_bfloat16, whose
 * operators on sm_80 (the gate's target) are fma.rn.bf16 instructions with a rounding modifier.
 * A product passed to a warp shuffle (`__shfl_xor_sync(m, a * b, 1)`) converts to __half2 (or
 * __half) on the way in: the shuffled value is the rounded product, as on a GPU. */
#if defined(__MG_FP_CONTRACT) && __MG_FP_CONTRACT
struct __mg_hprod : __half { __half __mg_a, __mg_b; };
struct __mg_hprod2 : __half2 { __half2 __mg_a, __mg_b; };
/* r = a*b rounded (as stored in a product), c the addend: fused while r is still that product */
static inline __half __mg_hmuladd(__half a, __half b, __half r, __half c) {
    return __hmul(a, b).__x == r.__x ? __hfma(a, b, c) : __hadd(r, c);
}
static inline __mg_hprod operator*(const __half &a, const __half &b) { return __mg_hprod{__hmul(a, b), a, b}; }
static inline __mg_hprod operator-(const __mg_hprod &p) { return __mg_hprod{__hneg(p), __hneg(p.__mg_a), p.__mg_b}; }
static inline __half operator+(const __mg_hprod &p, const __half &c) { return __mg_hmuladd(p.__mg_a, p.__mg_b, p, c); }
static inline __half operator+(const __half &c, const __mg_hprod &p) { return p + c; }
static inline __half operator+(const __mg_hprod &p, const __mg_hprod &q) { return p + (const __half &)q; }
static inline __half operator-(const __mg_hprod &p, const __half &c) { return p + __hneg(c); }
static inline __half operator-(const __half &c, const __mg_hprod &p) { return -p + c; }
static inline __half operator-(const __mg_hprod &p, const __mg_hprod &q) { return p + __hneg(q); }
static inline __half &operator+=(__half &c, const __mg_hprod &p) { c = p + c; return c; }
static inline __half &operator-=(__half &c, const __mg_hprod &p) { c = -p + c; return c; }
static inline __mg_hprod2 operator*(const __half2 &a, const __half2 &b) { return __mg_hprod2{__hmul2(a, b), a, b}; }
static inline __mg_hprod2 operator-(const __mg_hprod2 &p) { return __mg_hprod2{__hneg2(p), __hneg2(p.__mg_a), p.__mg_b}; }
static inline __half2 operator+(const __mg_hprod2 &p, const __half2 &c) {
    return __half2(__mg_hmuladd(p.__mg_a.x, p.__mg_b.x, p.x, c.x), __mg_hmuladd(p.__mg_a.y, p.__mg_b.y, p.y, c.y));
}
static inline __half2 operator+(const __half2 &c, const __mg_hprod2 &p) { return p + c; }
static inline __half2 operator+(const __mg_hprod2 &p, const __mg_hprod2 &q) { return p + (const __half2 &)q; }
static inline __half2 operator-(const __mg_hprod2 &p, const __half2 &c) { return p + __hneg2(c); }
static inline __half2 operator-(const __half2 &c, const __mg_hprod2 &p) { return -p + c; }
static inline __half2 operator-(const __mg_hprod2 &p, const __mg_hprod2 &q) { return p + __hneg2(q); }
static inline __half2 &operator+=(__half2 &c, const __mg_hprod2 &p) { c = p + c; return c; }
static inline __half2 &operator-=(__half2 &c, const __mg_hprod2 &p) { c = -p + c; return c; }
#else
__MG_PLAIN_MUL_OPS(__half, __half2)
#endif

/* Constants (cuda_fp16.h spells them as __half_raw values). */
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
