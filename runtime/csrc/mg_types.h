/*
 * mg_types.h -- CUDA vector types for the mutagym CPU emulator.
 *
 * Emulates vector_types.h / vector_functions.h: char1..double4 with CUDA's sizes and alignments
 * (64-bit Linux: long is 8 bytes), the make_* constructors, dim3, and warpSize.
 * The types are plain aggregates (no operators), as in CUDA; a misaligned float4/int4 access
 * faults on the CPU as it does on a GPU because the alignments are the same.
 * long4/ulong4/longlong4/ulonglong4/double4 have CUDA 12's 16-byte alignment (CUDA 13 marks them
 * deprecated in favour of the *_16a / *_32a variants, which are provided too; no deprecation
 * warning is emitted here).
 *
 * The second half of this file holds small internal helpers (prefix __mg_) shared by the other
 * mg_*.h headers: bit casts, round-to-odd narrowing, saturating float->integer conversion,
 * and a barrier that keeps the compiler from fusing a rounded product into an FMA.
 *
 * Sandbox rules: every function is static inline, no static objects with constructors, no libstdc++
 * runtime; the only external symbols a user of these headers can end up referencing are libm's.
 */
#pragma once

#include <stdint.h>

#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#error "mutagym's device library needs IEEE semantics (NaN tests, exact rounding tricks): do not build with -ffast-math or -ffinite-math-only"
#endif

/* ------------------------------------------------------------------------------------------ */
/* Vector types                                                                               */
/* ------------------------------------------------------------------------------------------ */

#define __MG_VEC1(name, T, A)                                                                  \
    struct alignas(A) name { T x; };                                                           \
    static inline constexpr name make_##name(T x) { return name{x}; }
#define __MG_VEC2(name, T, A)                                                                  \
    struct alignas(A) name { T x, y; };                                                        \
    static inline constexpr name make_##name(T x, T y) { return name{x, y}; }
#define __MG_VEC3(name, T, A)                                                                  \
    struct alignas(A) name { T x, y, z; };                                                     \
    static inline constexpr name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define __MG_VEC4(name, T, A)                                                                  \
    struct alignas(A) name { T x, y, z, w; };                                                  \
    static inline constexpr name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }

/*                 1-vector                      2-vector                       3-vector                      4-vector */
__MG_VEC1(char1, signed char, 1)        __MG_VEC2(char2, signed char, 2)      __MG_VEC3(char3, signed char, 1)      __MG_VEC4(char4, signed char, 4)
__MG_VEC1(uchar1, unsigned char, 1)     __MG_VEC2(uchar2, unsigned char, 2)   __MG_VEC3(uchar3, unsigned char, 1)   __MG_VEC4(uchar4, unsigned char, 4)
__MG_VEC1(short1, short, 2)             __MG_VEC2(short2, short, 4)           __MG_VEC3(short3, short, 2)           __MG_VEC4(short4, short, 8)
__MG_VEC1(ushort1, unsigned short, 2)   __MG_VEC2(ushort2, unsigned short, 4) __MG_VEC3(ushort3, unsigned short, 2)  __MG_VEC4(ushort4, unsigned short, 8)
__MG_VEC1(int1, int, 4)                 __MG_VEC2(int2, int, 8)               __MG_VEC3(int3, int, 4)               __MG_VEC4(int4, int, 16)
__MG_VEC1(uint1, unsigned int, 4)       __MG_VEC2(uint2, unsigned int, 8)     __MG_VEC3(uint3, unsigned int, 4)     __MG_VEC4(uint4, unsigned int, 16)
__MG_VEC1(long1, long, 8)               __MG_VEC2(long2, long, 16)            __MG_VEC3(long3, long, 8)             __MG_VEC4(long4, long, 16)
__MG_VEC1(ulong1, unsigned long, 8)     __MG_VEC2(ulong2, unsigned long, 16)  __MG_VEC3(ulong3, unsigned long, 8)   __MG_VEC4(ulong4, unsigned long, 16)
__MG_VEC1(longlong1, long long, 8)      __MG_VEC2(longlong2, long long, 16)   __MG_VEC3(longlong3, long long, 8)    __MG_VEC4(longlong4, long long, 16)
__MG_VEC1(ulonglong1, unsigned long long, 8) __MG_VEC2(ulonglong2, unsigned long long, 16)
__MG_VEC3(ulonglong3, unsigned long long, 8) __MG_VEC4(ulonglong4, unsigned long long, 16)
__MG_VEC1(float1, float, 4)             __MG_VEC2(float2, float, 8)           __MG_VEC3(float3, float, 4)           __MG_VEC4(float4, float, 16)
__MG_VEC1(double1, double, 8)           __MG_VEC2(double2, double, 16)        __MG_VEC3(double3, double, 8)         __MG_VEC4(double4, double, 16)

/* CUDA 13's explicitly aligned 256-bit variants (long4_* and ulong4_* have no make_ function there). */
struct alignas(16) long4_16a { long x, y, z, w; };        struct alignas(32) long4_32a { long x, y, z, w; };
struct alignas(16) ulong4_16a { unsigned long x, y, z, w; }; struct alignas(32) ulong4_32a { unsigned long x, y, z, w; };
__MG_VEC4(longlong4_16a, long long, 16) __MG_VEC4(longlong4_32a, long long, 32)
__MG_VEC4(ulonglong4_16a, unsigned long long, 16) __MG_VEC4(ulonglong4_32a, unsigned long long, 32)
__MG_VEC4(double4_16a, double, 16)      __MG_VEC4(double4_32a, double, 32)

#undef __MG_VEC1
#undef __MG_VEC2
#undef __MG_VEC3
#undef __MG_VEC4

/* dim3: like CUDA's, constexpr constructor with defaults 1 and implicit conversions to/from uint3.
 * Constant-initialised, so a namespace-scope dim3 needs no dynamic initialiser. */
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* warpSize is a runtime variable in CUDA <= 12; here it is a compile-time constant. */
static constexpr int warpSize = 32;

/* ------------------------------------------------------------------------------------------ */
/* Internal helpers shared by mg_half.h, mg_bf16.h, mg_math.h                                 */
/* ------------------------------------------------------------------------------------------ */

static inline uint32_t __mg_f2u(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }
static inline float __mg_u2f(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline uint64_t __mg_d2u(double d) { uint64_t u; __builtin_memcpy(&u, &d, 8); return u; }
static inline double __mg_u2d(uint64_t u) { double d; __builtin_memcpy(&d, &u, 8); return d; }

/* Opaque copies: the compiler cannot see through them, so a product passed through one is
 * rounded on its own and never contracted with a following add into an FMA (GCC contracts by
 * default in GNU mode wherever the target has FMA, e.g. aarch64 or -march=native). */
#if defined(__x86_64__) || defined(__i386__)
static inline float __mg_fbar(float v) { __asm__("" : "+x"(v)); return v; }
static inline double __mg_dbar(double v) { __asm__("" : "+x"(v)); return v; }
#elif defined(__aarch64__)
static inline float __mg_fbar(float v) { __asm__("" : "+w"(v)); return v; }
static inline double __mg_dbar(double v) { __asm__("" : "+w"(v)); return v; }
#else
static inline float __mg_fbar(float v) { volatile float t = v; return t; }
static inline double __mg_dbar(double v) { volatile double t = v; return t; }
#endif

/* double -> float rounded to odd: if inexact, the result is the neighbour (toward d) whose last
 * significand bit is 1. Narrowing this result once more with any IEEE rounding mode to a format
 * at least two bits shorter (half: 11 bits, bf16: 8 bits, vs float's 24) gives the correctly
 * rounded result of the original double: no double-rounding error. Overflow gives +-FLT_MAX,
 * underflow +-2^-149; NaN and infinities pass through. */
static inline float __mg_d2f_odd(double d) {
    float f = (float)d;
    if ((double)f != d && d == d) {
        uint32_t u = __mg_f2u(f);
        if ((u & 1u) == 0u) {
            double af = (double)f < 0 ? -(double)f : (double)f;
            double ad = d < 0 ? -d : d;
            u = af < ad ? u + 1u : u - 1u;
        }
        f = __mg_u2f(u);
    }
    return f;
}

/* 64-bit integer magnitude -> double rounded to odd (exact below 2^53). */
static inline double __mg_u64_to_d_odd(uint64_t m) {
    if (m < (1ULL << 53)) return (double)m;
    int shift = 11 - __builtin_clzll(m); /* bits beyond the 53 kept ones */
    uint64_t keep = m >> shift;
    if (m & ((1ULL << shift) - 1ULL)) keep |= 1ULL;
    return (double)keep * (double)(1ULL << shift);
}

static inline double __mg_ll2d_odd(long long v) {
    return v < 0 ? -__mg_u64_to_d_odd(0ULL - (unsigned long long)v) : __mg_u64_to_d_odd((unsigned long long)v);
}

/* Rounding of a double to an integral value: 0 nearest-even, 1 toward zero, 2 down, 3 up. */
static inline double __mg_round_mode(double x, int mode) {
    switch (mode) {
    case 1: return __builtin_trunc(x);
    case 2: return __builtin_floor(x);
    case 3: return __builtin_ceil(x);
    default: return __builtin_rint(x); /* default FP environment: round to nearest even */
    }
}

/* Saturating conversions of an integral-valued double, as PTX cvt does it: NaN -> 0,
 * out-of-range values clamp to the destination range. */
static inline int32_t __mg_sat_i32(double r) {
    if (r != r) return 0;
    if (r >= 2147483647.0) return 2147483647;
    if (r <= -2147483648.0) return (-2147483647 - 1);
    return (int32_t)r;
}
static inline uint32_t __mg_sat_u32(double r) {
    if (r != r || r <= 0.0) return 0u;
    if (r >= 4294967295.0) return 4294967295u;
    return (uint32_t)r;
}
static inline int64_t __mg_sat_i64(double r) {
    if (r != r) return 0;
    if (r >= 9223372036854775808.0) return 9223372036854775807LL;
    if (r <= -9223372036854775808.0) return (-9223372036854775807LL - 1);
    return (int64_t)r;
}
static inline uint64_t __mg_sat_u64(double r) {
    if (r != r || r <= 0.0) return 0u;
    if (r >= 18446744073709551616.0) return 18446744073709551615ULL;
    return (uint64_t)r;
}

/* Clamp an integral-valued double into [lo, hi]; NaN -> 0 (for the narrow integer types). */
static inline int __mg_sat_range(double r, double lo, double hi) {
    return r != r ? 0 : r <= lo ? (int)lo : r >= hi ? (int)hi : (int)r;
}

/* Identity, used to keep a template parameter out of deduction. */
template <class T> struct __mg_identity { typedef T type; };
