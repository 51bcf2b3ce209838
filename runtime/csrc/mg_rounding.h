/*
 * mg_rounding.h -- CUDA's directed-rounding arithmetic intrinsics (__fadd_rz, __fmul_rd,
 * __fdiv_ru, __fsqrt_rz, __frcp_rd, __fmaf_ru, __dadd_rz, __ddiv_ru, __dsqrt_rd, __fma_rz, ...)
 * for the mutagym CPU emulator.
 *
 * Each result is the exact IEEE result rounded once in the intrinsic's mode (_rn to nearest even,
 * _rz toward zero, _rd toward -inf, _ru toward +inf), as PTX's add/mul/div/sqrt/rcp/fma.{rz,rm,rp}
 * compute it, subnormals included (the _ftz variants do not exist in CUDA's C API). The CPU's own
 * rounding mode is never changed: the exact value is built with integers, (-1)^neg * m * 2^e with
 * m up to 128 bits and a sticky bit for nonzero bits lost below m (a quotient's or a square root's
 * remainder, an addend shifted out), and rounded by `__mg_round_bits`, which also gives IEEE's
 * overflow results (inf, or the largest finite value where the mode rounds toward it) and the
 * sign of an exact zero sum (-0 only when rounding down). NaN and infinite operands, and zeros,
 * take the ordinary IEEE operation, whose result does not depend on the mode.
 * The _rn forms of add, sub, mul, div, sqrt, rcp and fma are in mg_math.h (plain IEEE operations).
 */
#pragma once

#include <stdint.h>
#include "mg_types.h"

typedef unsigned __int128 __mg_u128;

/* Modes as the __mg_round_mode helper numbers them. */
enum { __MG_RN = 0, __MG_RZ = 1, __MG_RD = 2, __MG_RU = 3 };

static inline int __mg_msb128(__mg_u128 m) {
    uint64_t hi = (uint64_t)(m >> 64);
    return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll((uint64_t)m);
}

/* The bits, in the binary format of P significand bits and EB exponent bits, of
 * (-1)^neg * (m + s) * 2^e, where s is in (0, 1) when sticky is set and 0 otherwise, rounded in
 * mode. m is nonzero; when sticky is set, m has at least P + 2 bits. */
template <int P, int EB>
static inline uint64_t __mg_round_bits(int neg, __mg_u128 m, int e, int sticky, int mode) {
    const int bias = (1 << (EB - 1)) - 1, qmin = 2 - bias - P;
    const uint64_t sign = (uint64_t)(neg != 0) << (P - 1 + EB);
    const uint64_t inf = ((1ULL << EB) - 1ULL) << (P - 1);
    int q = __mg_msb128(m) + e - (P - 1); /* exponent of the result's last bit */
    if (q < qmin) q = qmin;
    int shift = q - e;
    __mg_u128 keep;
    int cmp;     /* the discarded part against half a unit of the last place: -1, 0, +1 */
    int inexact;
    if (shift <= 0) {
        keep = m << -shift;
        cmp = -1;
        inexact = 0;
    } else if (shift <= 128) {
        __mg_u128 half = (__mg_u128)1 << (shift - 1);
        __mg_u128 rest = shift == 128 ? m : m & ((half << 1) - 1);
        keep = shift == 128 ? 0 : m >> shift;
        cmp = rest > half ? 1 : rest < half ? -1 : (sticky ? 1 : 0);
        inexact = rest != 0 || sticky;
    } else {
        keep = 0;
        cmp = -1;
        inexact = 1;
    }
    int up = mode == __MG_RN ? (cmp > 0 || (cmp == 0 && (keep & 1)))
           : mode == __MG_RD ? (neg && inexact)
           : mode == __MG_RU ? (!neg && inexact) : 0;
    keep += (unsigned)up;
    if (keep >> P) { keep >>= 1; q++; }
    uint64_t k = (uint64_t)keep;
    uint64_t bits = k >> (P - 1) ? ((uint64_t)(q + (P - 1) + bias) << (P - 1)) | (k & ((1ULL << (P - 1)) - 1))
                                  : k;
    if (bits >= inf) {  /* overflow: to infinity, or to the largest finite value */
        int to_inf = mode == __MG_RN || (mode == __MG_RD && neg) || (mode == __MG_RU && !neg);
        bits = to_inf ? inf : inf - 1;
    }
    return sign | bits;
}

/* A finite nonzero double as (-1)^neg * m * 2^e, m < 2^53. */
struct __mg_parts { int neg; uint64_t m; int e; };
static inline __mg_parts __mg_split(double d) {
    uint64_t b = __mg_d2u(d);
    int biased = (int)((b >> 52) & 0x7ff);
    uint64_t frac = b & ((1ULL << 52) - 1);
    __mg_parts p = {(int)(b >> 63), biased ? frac | (1ULL << 52) : frac, biased ? biased - 1075 : -1074};
    return p;
}
static inline int __mg_finite_nonzero(double d) { return d == d && d - d == 0.0 && d != 0.0; }

/* Results in a format: float (24 bits, 8 exponent bits) or double (53, 11). */
template <class F> struct __mg_format;
template <> struct __mg_format<float> {
    template <class... A> static float round(A... a) { return __mg_u2f((uint32_t)__mg_round_bits<24, 8>(a...)); }
};
template <> struct __mg_format<double> {
    template <class... A> static double round(A... a) { return __mg_u2d(__mg_round_bits<53, 11>(a...)); }
};

/* The sum of two exact terms (each (-1)^neg * m * 2^e, m < 2^127, nonzero), rounded to F. */
template <class F>
static inline F __mg_sum_exact(int na, __mg_u128 ma, int ea, int nb, __mg_u128 mb, int eb, int mode) {
    /* both with their top bit at bit 125: exact left shifts */
    int sa = 125 - __mg_msb128(ma), sb = 125 - __mg_msb128(mb);
    ma <<= sa; ea -= sa; mb <<= sb; eb -= sb;
    if (ea < eb) {
        int tn = na; na = nb; nb = tn;
        __mg_u128 tm = ma; ma = mb; mb = tm;
        int te = ea; ea = eb; eb = te;
    }
    int d = ea - eb, sticky = 0;
    if (d >= 127) { sticky = 1; mb = 0; }
    else if (d > 0) { sticky = (mb & (((__mg_u128)1 << d) - 1)) != 0; mb >>= d; }
    if (na == nb) return __mg_format<F>::round(na, ma + mb, ea, sticky, mode);
    /* a difference: a truncated subtrahend takes one more unit, the rest stays sticky */
    if (ma >= mb + (__mg_u128)sticky) {
        __mg_u128 m = ma - mb - (__mg_u128)sticky;
        if (m == 0 && !sticky) return mode == __MG_RD ? (F)-0.0 : (F)0.0;
        return __mg_format<F>::round(na, m, ea, sticky, mode);
    }
    return __mg_format<F>::round(nb, mb - ma, ea, 0, mode);
}

/* A sum of two exact zeros: -0 when both are -0, or when rounding down a +0 and a -0. */
template <class F> static inline F __mg_zero_sum(double a, double b, int mode) {
    int na = __builtin_signbit(a) != 0, nb = __builtin_signbit(b) != 0;
    return (na && nb) || (na != nb && mode == __MG_RD) ? (F)-0.0 : (F)0.0;
}

template <class F> static inline F __mg_add_dir(double a, double b, int mode) {
    if (!__mg_finite_nonzero(a) || !__mg_finite_nonzero(b)) {
        if (a == 0.0 && b == 0.0) return __mg_zero_sum<F>(a, b, mode);
        if (a == 0.0) return (F)b;
        if (b == 0.0) return (F)a;
        return (F)(__mg_dbar(a) + __mg_dbar(b));   /* NaN or infinity */
    }
    __mg_parts x = __mg_split(a), y = __mg_split(b);
    return __mg_sum_exact<F>(x.neg, x.m, x.e, y.neg, y.m, y.e, mode);
}

template <class F> static inline F __mg_mul_dir(double a, double b, int mode) {
    if (!__mg_finite_nonzero(a) || !__mg_finite_nonzero(b)) return (F)(__mg_dbar(a) * __mg_dbar(b));
    __mg_parts x = __mg_split(a), y = __mg_split(b);
    return __mg_format<F>::round(x.neg ^ y.neg, (__mg_u128)x.m * y.m, x.e + y.e, 0, mode);
}

template <class F> static inline F __mg_fma_dir(double a, double b, double c, int mode) {
    if (!__mg_finite_nonzero(a) || !__mg_finite_nonzero(b) || !__mg_finite_nonzero(c)) {
        if (a != a || b != b || c != c || a - a != 0.0 || b - b != 0.0 || c - c != 0.0)
            return (F)__builtin_fma(a, b, c);                  /* NaN or infinity */
        if (a == 0.0 || b == 0.0) {                              /* an exact zero product */
            double product = __builtin_signbit(a) != __builtin_signbit(b) ? -0.0 : 0.0;
            return c == 0.0 ? __mg_zero_sum<F>(product, c, mode) : (F)c;
        }
        return __mg_mul_dir<F>(a, b, mode);                     /* c is zero */
    }
    __mg_parts x = __mg_split(a), y = __mg_split(b), z = __mg_split(c);
    return __mg_sum_exact<F>(x.neg ^ y.neg, (__mg_u128)x.m * y.m, x.e + y.e, z.neg, z.m, z.e, mode);
}

/* m with its top bit moved to bit 52 (a subnormal's significand), e adjusted. */
static inline __mg_parts __mg_normal(__mg_parts p) {
    int s = 52 - (63 - __builtin_clzll(p.m));
    p.m <<= s;
    p.e -= s;
    return p;
}

template <class F> static inline F __mg_div_dir(double a, double b, int mode) {
    if (!__mg_finite_nonzero(a) || !__mg_finite_nonzero(b)) return (F)(__mg_dbar(a) / __mg_dbar(b));
    __mg_parts x = __mg_normal(__mg_split(a)), y = __mg_normal(__mg_split(b));
    /* restoring division: 64 quotient bits of x.m / y.m, the remainder decides the sticky bit */
    uint64_t q = 0, r = x.m;
    for (int i = 0; i < 64; i++) {
        q <<= 1;
        if (r >= y.m) { r -= y.m; q |= 1; }
        r <<= 1;
    }
    return __mg_format<F>::round(x.neg ^ y.neg, (__mg_u128)q, x.e - y.e - 63, r != 0, mode);
}

template <class F> static inline F __mg_sqrt_dir(double a, int mode) {
    if (!__mg_finite_nonzero(a) || a < 0.0) return (F)__builtin_sqrt(a);
    __mg_parts x = __mg_normal(__mg_split(a));
    if (x.e & 1) { x.m <<= 1; x.e -= 1; }
    /* digit-by-digit integer square root of x.m * 2^72: about 63 bits */
    __mg_u128 n = (__mg_u128)x.m << 72, root = 0, bit = (__mg_u128)1 << 126;
    while (bit > n) bit >>= 2;
    while (bit) {
        if (n >= root + bit) { n -= root + bit; root = (root >> 1) + bit; }
        else root >>= 1;
        bit >>= 2;
    }
    return __mg_format<F>::round(0, root, (x.e - 72) / 2, n != 0, mode);
}

#define __MG_DIRECTED(suffix, mode)                                                                 \
    static inline float __fadd_##suffix(float a, float b) { return __mg_add_dir<float>(a, b, mode); } \
    static inline float __fsub_##suffix(float a, float b) { return __mg_add_dir<float>(a, -(double)b, mode); } \
    static inline float __fmul_##suffix(float a, float b) { return __mg_mul_dir<float>(a, b, mode); } \
    static inline float __fdiv_##suffix(float a, float b) { return __mg_div_dir<float>(a, b, mode); } \
    static inline float __frcp_##suffix(float a) { return __mg_div_dir<float>(1.0, a, mode); }        \
    static inline float __fsqrt_##suffix(float a) { return __mg_sqrt_dir<float>(a, mode); }           \
    static inline float __fmaf_##suffix(float a, float b, float c) { return __mg_fma_dir<float>(a, b, c, mode); } \
    static inline float __fmaf_ieee_##suffix(float a, float b, float c) { return __mg_fma_dir<float>(a, b, c, mode); } \
    static inline double __dadd_##suffix(double a, double b) { return __mg_add_dir<double>(a, b, mode); } \
    static inline double __dsub_##suffix(double a, double b) { return __mg_add_dir<double>(a, -b, mode); } \
    static inline double __dmul_##suffix(double a, double b) { return __mg_mul_dir<double>(a, b, mode); } \
    static inline double __ddiv_##suffix(double a, double b) { return __mg_div_dir<double>(a, b, mode); } \
    static inline double __drcp_##suffix(double a) { return __mg_div_dir<double>(1.0, a, mode); }     \
    static inline double __dsqrt_##suffix(double a) { return __mg_sqrt_dir<double>(a, mode); }        \
    static inline double __fma_##suffix(double a, double b, double c) { return __mg_fma_dir<double>(a, b, c, mode); }
__MG_DIRECTED(rz, __MG_RZ)
__MG_DIRECTED(rd, __MG_RD)
__MG_DIRECTED(ru, __MG_RU)
#undef __MG_DIRECTED
static inline float __fmaf_ieee_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
