/*
 * mg_bf16.h -- __nv_bfloat16 / __nv_bfloat162 for the mutagym CPU emulator (emulates cuda_bf16.h).
 *
 * Storage is the upper 16 bits of an IEEE binary32 (member __x). float->bf16 rounds to nearest
 * even on the bits; a NaN stays a NaN (sign and top payload bits kept, quiet bit set: the same
 * result as ml_dtypes). bf16->float is exact. double and 64-bit integer conversions round once
 * (round-to-odd intermediate), so there is no double-rounding error.
 *
 * Same conversion set and operator set as __half (see mg_half.h); the generic intrinsics
 * (__hadd, __hfma, __hmax, __heq, hexp, ... and the *2 pair forms) are overloaded for bf16.
 * Explicit conversions __half <-> __nv_bfloat16 round once from the exact value.
 *
 * Numerics versus a GPU (sm_80+): + - * / and sqrt are correctly rounded (computed in float,
 * 24 >= 2*8+2 bits), __hfma is a single rounding, math functions are evaluated in double and
 * rounded once (the GPU uses approximate instructions: can differ by about 1 bf16 ulp). `a * b + c`
 * is never contracted (unlike __half's operators: see __MG_PLAIN_MUL_OPS below).
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include "mg_types.h"
#include "mg_half.h"

/* float -> bf16 bits. mode: 0 nearest-even, 1 toward zero, 2 down, 3 up. */
static inline unsigned short __mg_f2bf_bits(float f, int mode) {
    uint32_t u = __mg_f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u); /* quiet NaN */
    uint32_t low = u & 0xffffu, sign = u >> 31, h = u >> 16, inc;
    switch (mode) {
    case 1: inc = 0u; break;
    case 2: inc = (low != 0u && sign) ? 1u : 0u; break;
    case 3: inc = (low != 0u && !sign) ? 1u : 0u; break;
    default: inc = (low > 0x8000u || (low == 0x8000u && (h & 1u))) ? 1u : 0u; break;
    }
    return (unsigned short)(h + inc); /* carries into the exponent; past the max gives infinity */
}
static inline float __mg_bf2f(unsigned short b) { return __mg_u2f((uint32_t)b << 16); }
static inline unsigned short __mg_d2bf_bits(double d, int mode) { return __mg_f2bf_bits(__mg_d2f_odd(d), mode); }

struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

struct alignas(2) __nv_bfloat16 {
    unsigned short __x;

    __nv_bfloat16() = default;
    constexpr __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x(__mg_f2bf_bits(f, 0)) {}
    __nv_bfloat16(double d) : __x(__mg_d2bf_bits(d, 0)) {}
    __nv_bfloat16(short v) : __x(__mg_d2bf_bits((double)v, 0)) {}
    __nv_bfloat16(unsigned short v) : __x(__mg_d2bf_bits((double)v, 0)) {}
    __nv_bfloat16(int v) : __x(__mg_d2bf_bits((double)v, 0)) {}
    __nv_bfloat16(unsigned int v) : __x(__mg_d2bf_bits((double)v, 0)) {}
    __nv_bfloat16(long v) : __x(__mg_d2bf_bits(__mg_ll2d_odd(v), 0)) {}
    __nv_bfloat16(unsigned long v) : __x(__mg_d2bf_bits(__mg_u64_to_d_odd(v), 0)) {}
    __nv_bfloat16(long long v) : __x(__mg_d2bf_bits(__mg_ll2d_odd(v), 0)) {}
    __nv_bfloat16(unsigned long long v) : __x(__mg_d2bf_bits(__mg_u64_to_d_odd(v), 0)) {}
    explicit __nv_bfloat16(const __half &h) : __x(__mg_f2bf_bits(__mg_h2f(h.__x), 0)) {}

    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
    operator float() const { return __mg_bf2f(__x); }
    /* Integer conversions truncate toward zero and saturate (NaN -> 0), as CUDA's _rz ones. */
    operator signed char() const { return (signed char)__mg_sat_range(__builtin_trunc((double)__mg_bf2f(__x)), -128.0, 127.0); }
    operator unsigned char() const { return (unsigned char)__mg_sat_range(__builtin_trunc((double)__mg_bf2f(__x)), 0.0, 255.0); }
    operator char() const { return (char)__mg_sat_range(__builtin_trunc((double)__mg_bf2f(__x)), ((char)-1 < 0) ? -128.0 : 0.0, ((char)-1 < 0) ? 127.0 : 255.0); }
    operator short() const { return (short)__mg_sat_range(__builtin_trunc((double)__mg_bf2f(__x)), -32768.0, 32767.0); }
    operator unsigned short() const { return (unsigned short)__mg_sat_range(__builtin_trunc((double)__mg_bf2f(__x)), 0.0, 65535.0); }
    operator int() const { return __mg_sat_i32(__builtin_trunc((double)__mg_bf2f(__x))); }
    operator unsigned int() const { return __mg_sat_u32(__builtin_trunc((double)__mg_bf2f(__x))); }
    operator long() const { return (long)__mg_sat_i64(__builtin_trunc((double)__mg_bf2f(__x))); }
    operator unsigned long() const { return (unsigned long)__mg_sat_u64(__builtin_trunc((double)__mg_bf2f(__x))); }
    operator long long() const { return __mg_sat_i64(__builtin_trunc((double)__mg_bf2f(__x))); }
    operator unsigned long long() const { return __mg_sat_u64(__builtin_trunc((double)__mg_bf2f(__x))); }
    operator bool() const { return (__x & 0x7fffu) != 0u; }
};

/* __half from bf16 (declared in mg_half.h): bf16 -> float is exact, then one rounding. */
inline __half::__half(const __nv_bfloat16 &b) : __x(__mg_f2h_bits(__mg_bf2f(b.__x), 0)) {}

struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;

    __nv_bfloat162() = default;
    constexpr __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
    constexpr __nv_bfloat162(const __nv_bfloat162_raw &r) : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
    operator __nv_bfloat162_raw() const { return __nv_bfloat162_raw{x.__x, y.__x}; }
};

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

/* ------------------------------------------------------------------------------------------ */
/* Conversions                                                                                */
/* ------------------------------------------------------------------------------------------ */

static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short v) { return __nv_bfloat16(__nv_bfloat16_raw{v}); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline __nv_bfloat16 __short_as_bfloat16(short v) { return __ushort_as_bfloat16((unsigned short)v); }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }

static inline __nv_bfloat16 __float2bfloat16(float f) { return __ushort_as_bfloat16(__mg_f2bf_bits(f, 0)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __ushort_as_bfloat16(__mg_f2bf_bits(f, 0)); }
static inline __nv_bfloat16 __float2bfloat16_rz(float f) { return __ushort_as_bfloat16(__mg_f2bf_bits(f, 1)); }
static inline __nv_bfloat16 __float2bfloat16_rd(float f) { return __ushort_as_bfloat16(__mg_f2bf_bits(f, 2)); }
static inline __nv_bfloat16 __float2bfloat16_ru(float f) { return __ushort_as_bfloat16(__mg_f2bf_bits(f, 3)); }
static inline float __bfloat162float(__nv_bfloat16 h) { return __mg_bf2f(h.__x); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return __ushort_as_bfloat16(__mg_d2bf_bits(d, 0)); }
static inline __nv_bfloat16 __mg_d2bf(double d) { return __ushort_as_bfloat16(__mg_d2bf_bits(d, 0)); }

#define __MG_INT2BF(name, T, TOD)                                                                      \
    static inline __nv_bfloat16 name##_rn(T v) { return __ushort_as_bfloat16(__mg_d2bf_bits(TOD(v), 0)); } \
    static inline __nv_bfloat16 name##_rz(T v) { return __ushort_as_bfloat16(__mg_d2bf_bits(TOD(v), 1)); } \
    static inline __nv_bfloat16 name##_rd(T v) { return __ushort_as_bfloat16(__mg_d2bf_bits(TOD(v), 2)); } \
    static inline __nv_bfloat16 name##_ru(T v) { return __ushort_as_bfloat16(__mg_d2bf_bits(TOD(v), 3)); }
#define __MG_EXACT_D(v) ((double)(v))
__MG_INT2BF(__int2bfloat16, int, __MG_EXACT_D)
__MG_INT2BF(__uint2bfloat16, unsigned int, __MG_EXACT_D)
__MG_INT2BF(__short2bfloat16, short, __MG_EXACT_D)
__MG_INT2BF(__ushort2bfloat16, unsigned short, __MG_EXACT_D)
__MG_INT2BF(__ll2bfloat16, long long, __mg_ll2d_odd)
__MG_INT2BF(__ull2bfloat16, unsigned long long, __mg_u64_to_d_odd)
#undef __MG_EXACT_D
#undef __MG_INT2BF

#define __MG_BF2INT(name, R, sat)                                                                 \
    static inline R name##_rn(__nv_bfloat16 h) { return (R)sat(__mg_round_mode(__mg_bf2f(h.__x), 0)); } \
    static inline R name##_rz(__nv_bfloat16 h) { return (R)sat(__mg_round_mode(__mg_bf2f(h.__x), 1)); } \
    static inline R name##_rd(__nv_bfloat16 h) { return (R)sat(__mg_round_mode(__mg_bf2f(h.__x), 2)); } \
    static inline R name##_ru(__nv_bfloat16 h) { return (R)sat(__mg_round_mode(__mg_bf2f(h.__x), 3)); }
__MG_BF2INT(__bfloat162int, int, __mg_sat_i32)
__MG_BF2INT(__bfloat162uint, unsigned int, __mg_sat_u32)
__MG_BF2INT(__bfloat162ll, long long, __mg_sat_i64)
__MG_BF2INT(__bfloat162ull, unsigned long long, __mg_sat_u64)
#undef __MG_BF2INT
static inline short __bfloat162short_rz(__nv_bfloat16 h) { return (short)h; }
static inline unsigned short __bfloat162ushort_rz(__nv_bfloat16 h) { return (unsigned short)h; }
static inline signed char __bfloat162char_rz(__nv_bfloat16 h) { return (signed char)h; }
static inline unsigned char __bfloat162uchar_rz(__nv_bfloat16 h) { return (unsigned char)h; }

/* half <-> bf16 as functions */
static inline __nv_bfloat16 __mg_half2bfloat16(__half h) { return __nv_bfloat16(h); }

/* pair packing */
static inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) { return __nv_bfloat162(x, y); }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 lo, __nv_bfloat16 hi) { return __nv_bfloat162(lo, hi); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 h) { return __nv_bfloat162(h, h); }
static inline __nv_bfloat162 __float2bfloat162_rn(float f) { return __nv_bfloat162(__float2bfloat16(f), __float2bfloat16(f)); }
static inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) { return __nv_bfloat162(__float2bfloat16(lo), __float2bfloat16(hi)); }
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __nv_bfloat162(__float2bfloat16(f.x), __float2bfloat16(f.y)); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2(__bfloat162float(h.x), __bfloat162float(h.y)); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
static inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
static inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
static inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
static inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
static inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 h) { return __nv_bfloat162(h.x, h.x); }
static inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 h) { return __nv_bfloat162(h.y, h.y); }
static inline __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162 h) { return __nv_bfloat162(h.y, h.x); }

/* Arithmetic, comparisons, math and operators: the generic set from mg_half.h. */
__MG_DEFINE_16BIT_OPS(__nv_bfloat16, __nv_bfloat162, __bfloat162float, __float2bfloat16, __mg_d2bf,
                      __ushort_as_bfloat16, 0x7f80u)
/* Never contracted: on sm_80 (the gate's target) cuda_bf16.hpp's __hmul / __hadd are fma.rn.bf16
 * instructions, whose rounding modifier keeps ptxas from fusing them (mg_half.h). */
__MG_PLAIN_MUL_OPS(__nv_bfloat16, __nv_bfloat162)

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
