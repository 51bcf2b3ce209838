// Test driver for the device library headers (runtime/csrc/mg_*.h).
//
//   driver MODE IN OUT     reads raw records from IN, writes raw results to OUT
//   driver report          prints "key value" lines (types, atomics, conversions, ...)
//
// Modes are "<signature>:<function>", e.g. "ff:__expf" maps float32 -> float32. The Python test
// (tests/runtime/test_device_library.py) builds the inputs and checks the outputs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

#include "mg_types.h"
#include "mg_half.h"
#include "mg_bf16.h"
#include "mg_math.h"
#include "mg_rounding.h"
#include "mg_atomic.h"
#include "mg_intrinsics.h"

// What the runner provides to the headers: the race detector's hooks (runtime/csrc/race.h), which
// change no value, and the clock (runner.cpp draws its start and step per case).
extern "C" void __mg_race_atomic(const void*, unsigned) {}
extern "C" void __mg_race_fence(void) {}
extern "C" unsigned long long __mg_clock(void) { static unsigned long long c; return c += 16; }

// ---------------------------------------------------------------- compile-time properties
static_assert(std::is_trivially_default_constructible<__half>::value, "__half");
static_assert(std::is_trivially_copyable<__half>::value, "__half");
static_assert(std::is_trivially_default_constructible<__half2>::value, "__half2");
static_assert(std::is_trivially_copyable<__half2>::value, "__half2");
static_assert(std::is_trivially_default_constructible<__nv_bfloat16>::value, "bf16");
static_assert(std::is_trivially_copyable<__nv_bfloat162>::value, "bf162");
static_assert(std::is_trivial<float4>::value && std::is_trivial<int2>::value, "vectors");
static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && sizeof(__half2) == 4 && alignof(__half2) == 4, "half");
static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat162) == 4, "bf16");
static_assert(warpSize == 32, "warpSize");
static int warp_buffer[warpSize];  // usable in a constant expression
constexpr dim3 kBlock(256);
static_assert(kBlock.x == 256 && kBlock.y == 1 && kBlock.z == 1, "dim3 defaults");
static __half shared_like[256];  // like `__shared__ __half buf[256]`: no constructor needed
static __nv_bfloat162 shared_like2[64];

// CUDA's min/max overload set: result types.
static_assert(std::is_same<decltype(min(1, 2)), int>::value, "");
static_assert(std::is_same<decltype(min(1, 2u)), unsigned int>::value, "");
static_assert(std::is_same<decltype(max(1u, 2)), unsigned int>::value, "");
static_assert(std::is_same<decltype(min(1L, 2L)), long>::value, "");
static_assert(std::is_same<decltype(min(1L, 2UL)), unsigned long>::value, "");
static_assert(std::is_same<decltype(max(1LL, 2LL)), long long>::value, "");
static_assert(std::is_same<decltype(max(1ULL, 2LL)), unsigned long long>::value, "");
static_assert(std::is_same<decltype(min(1.0f, 2.0f)), float>::value, "");
static_assert(std::is_same<decltype(min(1.0, 2.0)), double>::value, "");
static_assert(std::is_same<decltype(max(1.0f, 2.0)), double>::value, "");
static_assert(std::is_same<decltype(max(1.0, 2.0f)), double>::value, "");
// CUDA's float overloads of its extra functions.
static_assert(std::is_same<decltype(rsqrt(1.0f)), float>::value, "");
static_assert(std::is_same<decltype(erfinv(0.5f)), float>::value, "");
static_assert(std::is_same<decltype(normcdf(0.5f)), float>::value, "");
static_assert(std::is_same<decltype(sinpi(0.5f)), float>::value, "");
static_assert(std::is_same<decltype(exp10(0.5f)), float>::value, "");
static_assert(std::is_same<decltype(rsqrt(1.0)), double>::value, "");

// ---------------------------------------------------------------- raw I/O
static void *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(sz > 0 ? (size_t)sz : 1);
    if (sz > 0 && fread(buf, 1, (size_t)sz, f) != (size_t)sz) { perror("fread"); exit(2); }
    fclose(f);
    *n = (size_t)sz;
    return buf;
}
static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) { perror(path); exit(2); }
    fclose(f);
}

// Apply fn to every record: record = NIN inputs of type I, result = NOUT outputs of type O.
#define MAP(I, NIN, O, NOUT, ...)                                                                  \
    do {                                                                                           \
        size_t nbytes;                                                                             \
        const I *in = (const I *)read_file(argv[2], &nbytes);                                     \
        size_t n = nbytes / (sizeof(I) * (NIN));                                                   \
        O *out = (O *)malloc(sizeof(O) * (NOUT) * (n ? n : 1));                                   \
        for (size_t k = 0; k < n; ++k) {                                                           \
            const I *x = in + k * (NIN);                                                           \
            O *y = out + k * (NOUT);                                                               \
            (void)x; (void)y;                                                                      \
            __VA_ARGS__;                                                                           \
        }                                                                                          \
        write_file(argv[3], out, sizeof(O) * (NOUT) * n);                                         \
        return 0;                                                                                  \
    } while (0)

#define IS(name) (strcmp(mode, name) == 0)
#define FN(sig, fn) (strcmp(mode, sig ":" #fn) == 0)

static __half H(uint16_t b) { return __ushort_as_half(b); }
static __nv_bfloat16 B(uint16_t b) { return __ushort_as_bfloat16(b); }

static int report(void);

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "report") == 0) return report();
    if (argc != 4) { fprintf(stderr, "usage: driver MODE IN OUT | driver report\n"); return 2; }
    const char *mode = argv[1];

    // ------------------------------------------------------------ 16-bit conversions
    if (IS("f2h")) MAP(uint32_t, 1, uint16_t, 4, {
        float f = __mg_u2f(x[0]);
        y[0] = __half_as_ushort(__float2half_rn(f)); y[1] = __half_as_ushort(__float2half_rz(f));
        y[2] = __half_as_ushort(__float2half_rd(f)); y[3] = __half_as_ushort(__float2half_ru(f));
    });
    if (IS("f2h_implicit")) MAP(uint32_t, 1, uint16_t, 2, {
        __half a = __mg_u2f(x[0]);          // implicit constructor
        __half b; b = __float2half(__mg_u2f(x[0]));
        y[0] = a.__x; y[1] = b.__x;
    });
    if (IS("h2f")) MAP(uint16_t, 1, uint32_t, 2, {
        y[0] = __mg_f2u(__half2float(H(x[0])));
        y[1] = __mg_f2u((float)H(x[0]));    // implicit conversion
    });
    if (IS("f2bf")) MAP(uint32_t, 1, uint16_t, 4, {
        float f = __mg_u2f(x[0]);
        y[0] = __bfloat16_as_ushort(__float2bfloat16_rn(f)); y[1] = __bfloat16_as_ushort(__float2bfloat16_rz(f));
        y[2] = __bfloat16_as_ushort(__float2bfloat16_rd(f)); y[3] = __bfloat16_as_ushort(__float2bfloat16_ru(f));
    });
    if (IS("bf2f")) MAP(uint16_t, 1, uint32_t, 1, { y[0] = __mg_f2u(__bfloat162float(B(x[0]))); });
    if (IS("d2h")) MAP(uint64_t, 1, uint16_t, 2, {
        y[0] = __half_as_ushort(__double2half(__mg_u2d(x[0]))); y[1] = __half(__mg_u2d(x[0])).__x;
    });
    if (IS("d2bf")) MAP(uint64_t, 1, uint16_t, 2, {
        y[0] = __bfloat16_as_ushort(__double2bfloat16(__mg_u2d(x[0]))); y[1] = __nv_bfloat16(__mg_u2d(x[0])).__x;
    });
    if (IS("ll2h")) MAP(int64_t, 1, uint16_t, 2, { y[0] = __half_as_ushort(__ll2half_rn(x[0])); y[1] = __half((long long)x[0]).__x; });
    if (IS("ll2bf")) MAP(int64_t, 1, uint16_t, 3, {
        y[0] = __bfloat16_as_ushort(__ll2bfloat16_rn(x[0]));
        y[1] = __nv_bfloat16((long long)x[0]).__x;
        y[2] = __bfloat16_as_ushort(__int2bfloat16_rn((int)x[0]));
    });
    if (IS("h2i")) MAP(uint16_t, 1, int32_t, 5, {
        y[0] = __half2int_rn(H(x[0])); y[1] = __half2int_rz(H(x[0]));
        y[2] = __half2int_rd(H(x[0])); y[3] = __half2int_ru(H(x[0]));
        y[4] = (int)H(x[0]);                // conversion operator: toward zero
    });

    // ------------------------------------------------------------ 16-bit arithmetic
    if (IS("harith")) MAP(uint16_t, 3, uint16_t, 9, {
        __half a = H(x[0]), b = H(x[1]), c = H(x[2]);
        y[0] = __hadd(a, b).__x; y[1] = __hsub(a, b).__x; y[2] = __hmul(a, b).__x; y[3] = __hdiv(a, b).__x;
        y[4] = __hfma(a, b, c).__x; y[5] = __hmax(a, b).__x; y[6] = __hmin(a, b).__x;
        y[7] = (a * b + c).__x;             // operators: two roundings (one, contracted)
        __half2 p = __halves2half2(a, b) * __halves2half2(b, c);
        y[8] = (uint16_t)(__low2half(p).__x ^ __high2half(p).__x);
    });
    if (IS("barith")) MAP(uint16_t, 3, uint16_t, 9, {
        __nv_bfloat16 a = B(x[0]), b = B(x[1]), c = B(x[2]);
        y[0] = __hadd(a, b).__x; y[1] = __hsub(a, b).__x; y[2] = __hmul(a, b).__x; y[3] = __hdiv(a, b).__x;
        y[4] = __hfma(a, b, c).__x; y[5] = __hmax(a, b).__x; y[6] = __hmin(a, b).__x;
        y[7] = (a * b + c).__x;
        __nv_bfloat162 p = __halves2bfloat162(a, b) * __halves2bfloat162(b, c);
        y[8] = (uint16_t)(__low2bfloat16(p).__x ^ __high2bfloat16(p).__x);
    });
    if (IS("hcmp")) MAP(uint16_t, 2, uint8_t, 8, {
        __half a = H(x[0]), b = H(x[1]);
        y[0] = __heq(a, b); y[1] = __hne(a, b); y[2] = __hlt(a, b); y[3] = __hge(a, b);
        y[4] = a != b; y[5] = a <= b; y[6] = __hneu(a, b); y[7] = __hisnan(a);
    });
    if (IS("hfun")) MAP(uint16_t, 1, uint16_t, 8, {
        __half a = H(x[0]);
        y[0] = hexp(a).__x; y[1] = hlog(a).__x; y[2] = hsqrt(a).__x; y[3] = hrcp(a).__x;
        y[4] = hsin(a).__x; y[5] = hfloor(a).__x; y[6] = hrint(a).__x; y[7] = hexp2(a).__x;
    });
    if (IS("bfun")) MAP(uint16_t, 1, uint16_t, 4, {
        __nv_bfloat16 a = B(x[0]);
        y[0] = hexp(a).__x; y[1] = hlog(a).__x; y[2] = hsqrt(a).__x; y[3] = hrsqrt(a).__x;
    });

    // ------------------------------------------------------------ float / double math
#define FF(fn) if (FN("ff", fn)) MAP(float, 1, float, 1, { y[0] = fn(x[0]); });
    FF(__expf) FF(expf) FF(__exp10f) FF(__logf) FF(logf) FF(__log2f) FF(__log10f) FF(__sinf) FF(__cosf)
    FF(__tanf) FF(sinf) FF(erfinvf) FF(erfcinvf) FF(normcdff) FF(normcdfinvf) FF(sinpif) FF(cospif)
    FF(rsqrtf) FF(rcbrtf) FF(__saturatef) FF(__frsqrt_rn) FF(__frcp_rn) FF(__fsqrt_rn) FF(erfcxf) FF(exp10f)
#undef FF
#define FFF(fn) if (FN("fff", fn)) MAP(float, 2, float, 1, { y[0] = fn(x[0], x[1]); });
    FFF(__fdividef) FFF(__powf) FFF(rhypotf) FFF(__fadd_rn) FFF(__fmul_rn) FFF(__fdiv_rn) FFF(fdividef)
#undef FFF
    if (IS("fff:min")) MAP(float, 2, float, 1, { y[0] = min(x[0], x[1]); });
    if (IS("fff:max")) MAP(float, 2, float, 1, { y[0] = max(x[0], x[1]); });
#define DD(fn) if (FN("dd", fn)) MAP(double, 1, double, 1, { y[0] = fn(x[0]); });
    DD(erfinv) DD(erfcinv) DD(normcdf) DD(normcdfinv) DD(erfcx) DD(sinpi) DD(cospi) DD(rcbrt)
#undef DD
    if (IS("dd:rsqrt")) MAP(double, 1, double, 1, { y[0] = rsqrt(x[0]); });
#define FI(fn) if (FN("fi", fn)) MAP(float, 1, int64_t, 1, { y[0] = (int64_t)fn(x[0]); });
    FI(__float2int_rn) FI(__float2int_rz) FI(__float2int_rd) FI(__float2int_ru)
    FI(__float2uint_rn) FI(__float2uint_rz) FI(__float2ll_rn) FI(__float2ll_rz)
#undef FI
#define DI(fn) if (FN("di", fn)) MAP(double, 1, int64_t, 1, { y[0] = (int64_t)fn(x[0]); });
    DI(__double2int_rn) DI(__double2int_rz) DI(__double2int_rd) DI(__double2int_ru) DI(__double2ll_rn)
#undef DI
#define LF(fn, T) if (FN("lf", fn)) MAP(int64_t, 1, float, 1, { y[0] = fn((T)x[0]); });
    LF(__ll2float_rn, long long) LF(__ll2float_rz, long long) LF(__ll2float_rd, long long) LF(__ll2float_ru, long long)
    LF(__ull2float_rn, unsigned long long) LF(__int2float_rz, int) LF(__int2float_ru, int)
#undef LF
#define DF(fn) if (FN("df", fn)) MAP(double, 1, float, 1, { y[0] = fn(x[0]); });
    DF(__double2float_rn) DF(__double2float_rz) DF(__double2float_rd) DF(__double2float_ru)
#undef DF

    // ------------------------------------------------------------ rounding modes
    // (a, b, c) -> for rn, rz, rd, ru: a+b, a-b, a*b, a/b, a*b+c, sqrt(a), 1/a
#define DIRECTED(T, U, FROM, TO, add, sub, mul, div, fma, sqrt, rcp)                               \
    { T a = FROM(x[0]), b = FROM(x[1]), c = FROM(x[2]);                                           \
      U r[7] = {TO(add(a, b)), TO(sub(a, b)), TO(mul(a, b)), TO(div(a, b)), TO(fma(a, b, c)),     \
                TO(sqrt(a)), TO(rcp(a))};                                                        \
      memcpy(y, r, sizeof r); y += 7; }
#define MODES32(m) DIRECTED(float, uint32_t, __mg_u2f, __mg_f2u, __fadd_##m, __fsub_##m, __fmul_##m,  \
                            __fdiv_##m, __fmaf_##m, __fsqrt_##m, __frcp_##m)
#define MODES64(m) DIRECTED(double, uint64_t, __mg_u2d, __mg_d2u, __dadd_##m, __dsub_##m, __dmul_##m, \
                            __ddiv_##m, __fma_##m, __dsqrt_##m, __drcp_##m)
    if (IS("dir32")) MAP(uint32_t, 3, uint32_t, 28, { MODES32(rn) MODES32(rz) MODES32(rd) MODES32(ru) });
    if (IS("dir64")) MAP(uint64_t, 3, uint64_t, 28, { MODES64(rn) MODES64(rz) MODES64(rd) MODES64(ru) });
    if (IS("fma_ieee")) MAP(uint32_t, 3, uint32_t, 4, {
        float a = __mg_u2f(x[0]), b = __mg_u2f(x[1]), c = __mg_u2f(x[2]);
        y[0] = __mg_f2u(__fmaf_ieee_rn(a, b, c)); y[1] = __mg_f2u(__fmaf_ieee_rz(a, b, c));
        y[2] = __mg_f2u(__fmaf_ieee_rd(a, b, c)); y[3] = __mg_f2u(__fmaf_ieee_ru(a, b, c));
    });
#undef MODES32
#undef MODES64
#undef DIRECTED

    // ------------------------------------------------------------ integer intrinsics
#define UU(fn) if (FN("uu", fn)) MAP(uint64_t, 1, uint64_t, 1, { y[0] = (uint64_t)(int64_t)fn((unsigned int)x[0]); });
    UU(__popc) UU(__brev)
#undef UU
    if (IS("uu:__clz")) MAP(uint64_t, 1, uint64_t, 1, { y[0] = (uint64_t)__clz((int)(unsigned int)x[0]); });
    if (IS("uu:__ffs")) MAP(uint64_t, 1, uint64_t, 1, { y[0] = (uint64_t)__ffs((int)(unsigned int)x[0]); });
    if (IS("uu:__popcll")) MAP(uint64_t, 1, uint64_t, 1, { y[0] = (uint64_t)__popcll(x[0]); });
    if (IS("uu:__brevll")) MAP(uint64_t, 1, uint64_t, 1, { y[0] = __brevll(x[0]); });
    if (IS("uu:__clzll")) MAP(uint64_t, 1, uint64_t, 1, { y[0] = (uint64_t)__clzll((long long)x[0]); });
    if (IS("uu:__ffsll")) MAP(uint64_t, 1, uint64_t, 1, { y[0] = (uint64_t)__ffsll((long long)x[0]); });
#define U2(fn, T, R) if (FN("uuu", fn)) MAP(uint64_t, 2, uint64_t, 1, { y[0] = (uint64_t)(R)fn((T)x[0], (T)x[1]); });
    U2(__mulhi, int, int64_t) U2(__umulhi, unsigned int, uint64_t) U2(__mul24, int, int64_t)
    U2(__umul24, unsigned int, uint64_t) U2(__hadd, int, int64_t) U2(__rhadd, int, int64_t)
    U2(__uhadd, unsigned int, uint64_t) U2(__urhadd, unsigned int, uint64_t)
    U2(__mul64hi, long long, int64_t) U2(__umul64hi, unsigned long long, uint64_t)
#undef U2
#define U3(fn, T1, T3) if (FN("uuuu", fn)) MAP(uint64_t, 3, uint64_t, 1, { y[0] = (uint64_t)(int64_t)fn((T1)x[0], (T1)x[1], (T3)x[2]); });
    U3(__byte_perm, unsigned int, unsigned int) U3(__funnelshift_l, unsigned int, unsigned int)
    U3(__funnelshift_lc, unsigned int, unsigned int) U3(__funnelshift_r, unsigned int, unsigned int)
    U3(__funnelshift_rc, unsigned int, unsigned int) U3(__sad, int, unsigned int) U3(__usad, unsigned int, unsigned int)
#undef U3
    if (IS("uuuu:__dp4a")) MAP(uint64_t, 3, uint64_t, 1, { y[0] = (uint64_t)(int64_t)__dp4a((int)x[0], (int)x[1], (int)x[2]); });

    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}

// ---------------------------------------------------------------- report
#define P(key, fmt, val) printf("%s " fmt "\n", key, val)
#define TYPE(T) printf("sizeof.%s %zu\nalignof.%s %zu\n", #T, sizeof(T), #T, alignof(T));

static int report(void) {
    TYPE(char1) TYPE(char2) TYPE(char3) TYPE(char4) TYPE(uchar1) TYPE(uchar2) TYPE(uchar3) TYPE(uchar4)
    TYPE(short1) TYPE(short2) TYPE(short3) TYPE(short4) TYPE(ushort1) TYPE(ushort2) TYPE(ushort3) TYPE(ushort4)
    TYPE(int1) TYPE(int2) TYPE(int3) TYPE(int4) TYPE(uint1) TYPE(uint2) TYPE(uint3) TYPE(uint4)
    TYPE(long1) TYPE(long2) TYPE(long3) TYPE(long4) TYPE(ulong1) TYPE(ulong2) TYPE(ulong3) TYPE(ulong4)
    TYPE(longlong1) TYPE(longlong2) TYPE(longlong3) TYPE(longlong4)
    TYPE(ulonglong1) TYPE(ulonglong2) TYPE(ulonglong3) TYPE(ulonglong4)
    TYPE(float1) TYPE(float2) TYPE(float3) TYPE(float4) TYPE(double1) TYPE(double2) TYPE(double3) TYPE(double4)
    TYPE(double4_32a) TYPE(dim3) TYPE(__half) TYPE(__half2) TYPE(__nv_bfloat16) TYPE(__nv_bfloat162)

    float4 f4 = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    P("make_float4.z", "%g", __ldg(&f4).z);
    int2 i2 = make_int2(-1, 7);
    P("ldcs_int2.y", "%d", __ldcs(&i2).y);
    float st = 0.0f;
    __stcg(&st, 2.5);  // double converts to the pointee type
    P("stcg", "%g", st);
    dim3 b(256);
    P("dim3", "%u", b.x * 10000 + b.y * 100 + b.z);
    uint3 u3 = dim3(2, 3, 4);
    P("dim3_to_uint3", "%u", u3.x * 100 + u3.y * 10 + u3.z);
    P("warp_buffer", "%zu", sizeof(warp_buffer) / sizeof(int));
    shared_like[3] = __float2half(1.5f);
    shared_like2[1] = __floats2bfloat162_rn(1.0f, 2.0f);
    P("shared_like", "%g", __half2float(shared_like[3]) + __high2float(shared_like2[1]));

    // atomics: returned old values and resulting contents
    int i = 5;
    P("atomicAdd.int.old", "%d", atomicAdd(&i, 3)); P("atomicAdd.int.new", "%d", i);
    P("atomicSub.int.old", "%d", atomicSub(&i, 10)); P("atomicSub.int.new", "%d", i);
    P("atomicExch.int.old", "%d", atomicExch(&i, 42)); P("atomicExch.int.new", "%d", i);
    P("atomicMax.int.old", "%d", atomicMax(&i, 50)); P("atomicMax.int.new", "%d", i);
    P("atomicMin.int.old", "%d", atomicMin(&i, -7)); P("atomicMin.int.new", "%d", i);
    P("atomicCAS.fail.old", "%d", atomicCAS(&i, 0, 99)); P("atomicCAS.fail.new", "%d", i);
    P("atomicCAS.ok.old", "%d", atomicCAS(&i, -7, 99)); P("atomicCAS.ok.new", "%d", i);
    P("atomicAnd.old", "%d", atomicAnd(&i, 0x0f)); P("atomicAnd.new", "%d", i);
    P("atomicOr.old", "%d", atomicOr(&i, 0x30)); P("atomicOr.new", "%d", i);
    P("atomicXor.old", "%d", atomicXor(&i, 0xff)); P("atomicXor.new", "%d", i);
    unsigned int u = 10;
    P("atomicInc.wrap.old", "%u", atomicInc(&u, 10u)); P("atomicInc.wrap.new", "%u", u);
    P("atomicInc.old", "%u", atomicInc(&u, 10u)); P("atomicInc.new", "%u", u);
    P("atomicDec.old", "%u", atomicDec(&u, 10u)); P("atomicDec.new", "%u", u);
    P("atomicDec.zero.old", "%u", atomicDec(&u, 10u)); P("atomicDec.zero.new", "%u", u);
    u = 20;
    P("atomicDec.above.old", "%u", atomicDec(&u, 10u)); P("atomicDec.above.new", "%u", u);
    u = 3;
    P("atomicSub.uint.old", "%u", atomicSub(&u, 5u)); P("atomicSub.uint.new", "%u", u);
    unsigned long long ull = 1ULL << 40;
    P("atomicAdd.ull.old", "%llu", atomicAdd(&ull, 5ULL)); P("atomicAdd.ull.new", "%llu", ull);
    P("atomicCAS.ull.old", "%llu", atomicCAS(&ull, (1ULL << 40) + 5, 7ULL)); P("atomicCAS.ull.new", "%llu", ull);
    long long ll = -5;
    P("atomicMax.ll.old", "%lld", atomicMax(&ll, -9LL)); P("atomicMax.ll.new", "%lld", ll);
    unsigned short us = 3;
    P("atomicCAS.ushort.old", "%u", (unsigned)atomicCAS(&us, (unsigned short)3, (unsigned short)65535));
    P("atomicCAS.ushort.new", "%u", (unsigned)us);
    float f = 1.5f;
    P("atomicAdd.float.old", "%g", atomicAdd(&f, 0.25f)); P("atomicAdd.float.new", "%g", f);
    P("atomicAdd_block.float.old", "%g", atomicAdd_block(&f, 1.0f)); P("atomicAdd_block.float.new", "%g", f);
    P("atomicExch_system.float.old", "%g", atomicExch_system(&f, -1.0f)); P("atomicExch_system.float.new", "%g", f);
    double d = 0.5;
    P("atomicAdd.double.old", "%g", atomicAdd(&d, 0.25)); P("atomicAdd.double.new", "%g", d);
    __half h = __float2half(1.0f);
    P("atomicAdd.half.old", "%g", __half2float(atomicAdd(&h, __float2half(0.5f)))); P("atomicAdd.half.new", "%g", __half2float(h));
    __half2 h2 = __floats2half2_rn(1.0f, 2.0f);
    __half2 old2 = atomicAdd(&h2, __floats2half2_rn(0.5f, 0.25f));
    P("atomicAdd.half2.old", "%g", __low2float(old2) * 10 + __high2float(old2));
    P("atomicAdd.half2.new", "%g", __low2float(h2) * 10 + __high2float(h2));
    __nv_bfloat16 bf = __float2bfloat16(2.0f);
    P("atomicAdd.bf16.old", "%g", __bfloat162float(atomicAdd(&bf, __float2bfloat16(1.0f)))); P("atomicAdd.bf16.new", "%g", __bfloat162float(bf));

    // __half conversions and operators
    __half hv = 2.75f;
    int as_int = hv;
    P("half.to_int", "%d", as_int);
    __half hneg = -2.75;
    P("half.neg_to_int", "%d", (int)hneg);
    P("half.to_uchar_sat", "%d", (int)(unsigned char)__half(300));
    P("half.inf_to_int", "%d", (int)CUDART_INF_FP16);
    P("half.nan_to_int", "%d", (int)CUDART_NAN_FP16);
    P("half.negzero_bool", "%d", (int)(bool)CUDART_NEG_ZERO_FP16);
    P("half.nan_bool", "%d", (int)(bool)CUDART_NAN_FP16);
    __half from_uint = 1u;
    __half from_big = 70000;
    P("half.from_uint", "%g", (float)from_uint);
    P("half.from_big_isinf", "%d", __hisinf(from_big));
    __half inc = 1.0f;
    inc++; ++inc; inc -= __half(0.5f); inc *= __half(2.0f);
    P("half.incdec", "%g", (float)inc);
    P("half.cmp", "%d", (int)(__half(1.0f) < __half(2.0f)) * 10 + (int)(__half(1.0f) == __half(1.0f)));
    __half2 hp = __floats2half2_rn(1.0f, -2.0f);
    hp += __half2half2(__float2half(1.0f));
    float2 hpf = __half22float2(-hp);
    P("half2.ops", "%g", hpf.x * 10 + hpf.y);
    P("half.bf16_cross", "%g", __half2float(__half(__float2bfloat16(3.0f))) + __bfloat162float(__nv_bfloat16(__float2half(0.5f))));
    P("half.hmax_nan", "%g", __half2float(__hmax(CUDART_NAN_FP16, __float2half(3.0f))));
    P("half.hmax_zero_sign", "%u", (unsigned)__hmax(CUDART_NEG_ZERO_FP16, CUDART_ZERO_FP16).__x);
    P("half.hmin_zero_sign", "%u", (unsigned)__hmin(CUDART_ZERO_FP16, CUDART_NEG_ZERO_FP16).__x);
    P("half.hisinf_neg", "%d", __hisinf(__hneg(CUDART_INF_FP16)));
    P("half.habs", "%u", (unsigned)__habs(__float2half(-2.0f)).__x);
    P("half.hfma_relu", "%g", __half2float(__hfma_relu(__float2half(-1.0f), __float2half(2.0f), __float2half(0.5f))));
    P("half.hadd_sat", "%g", __half2float(__hadd_sat(__float2half(0.75f), __float2half(0.75f))));
    P("bf16.to_int", "%d", (int)__float2bfloat16(-7.9f));
    P("bf16.nan_bits_isnan", "%d", (int)__hisnan(__float2bfloat16(__int_as_float(0x7f800001))));

    // math scalars
    P("fdividef.big", "%g", __fdividef(1.0f, 0x1.8p126f));
    P("fdividef.big_neg", "%g", __fdividef(3.0f, -0x1.8p127f));
    P("fdividef.inf_big_isnan", "%d", (int)isnan(__fdividef(CUDART_INF_F, 0x1.8p126f)));
    P("div.big", "%g", 1.0f / 0x1.8p126f);
    P("saturate.nan", "%g", __saturatef(CUDART_NAN_F));
    P("nan_f.bits", "%#x", (unsigned)__float_as_uint(CUDART_NAN_F));
    P("nan.hi", "%#x", (unsigned)__double2hiint(CUDART_NAN));
    P("inf_f", "%g", CUDART_INF_F);
    P("pi_f", "%.9g", CUDART_PI_F);
    P("flt_max", "%g", FLT_MAX);
    P("hilo", "%.17g", __hiloint2double(__double2hiint(1.0 / 3.0), __double2loint(1.0 / 3.0)));
    P("int_as_float", "%g", __int_as_float(0x3f800000));
    P("min.mixed_sign", "%u", min(-1, 1u));
    P("max.int", "%d", max(-3, 2));
    P("min.ll", "%lld", min(-3LL, 2LL));
    P("min.nan", "%g", min(CUDART_NAN_F, 1.0f));
    P("max.float_double", "%g", max(1.5f, 2.5));
    P("umin", "%u", umin(3u, 5u));
    P("ullmax", "%llu", ullmax(3ULL, 5ULL));
    float s, c;
    __sincosf(0.5f, &s, &c);
    P("sincosf_fast", "%d", (int)(s == __sinf(0.5f) && c == __cosf(0.5f)));
    sincosf(0.5f, &s, &c);
    P("sincosf", "%.9g", s * s + c * c);
    sincospif(0.5f, &s, &c);
    P("sincospif", "%g", s * 10 + c);
    P("norm3df", "%g", norm3df(2.0f, 3.0f, 6.0f));
    P("rnorm3df", "%.9g", rnorm3df(2.0f, 3.0f, 6.0f));
    P("norm3df.inf_nan", "%g", norm3df(CUDART_INF_F, CUDART_NAN_F, 1.0f));
    float arr[4] = {1.0f, 2.0f, 2.0f, 4.0f};
    P("normf", "%g", normf(4, arr));
    P("exp10f", "%g", exp10f(2.0f));
    P("clock_monotonic", "%d", (int)(clock64() < clock64() && clock() < clock()));
    __threadfence();
    __threadfence_block();
    __nanosleep(100);
    return 0;
}
