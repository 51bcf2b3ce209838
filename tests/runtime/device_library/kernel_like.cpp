// A kernel-like translation unit that uses most of the device library. The test builds it as a
// shared object with -nostdlib and checks that it references only libm (plus memcpy/memset/
// memmove) and carries no initialiser sections.
#include "mg_types.h"
#include "mg_half.h"
#include "mg_bf16.h"
#include "mg_math.h"
#include "mg_rounding.h"
#include "mg_atomic.h"
#include "mg_intrinsics.h"

static __half s_half[256];            // like __shared__ __half s[256]
static __nv_bfloat162 s_bf2[64];
static float4 s_vec[32];
static dim3 s_dims(16, 8);             // constant-initialised
static int counters[warpSize];

extern "C" void fast_math(const float *in, float *out, int n) {
    for (int i = 0; i < n; ++i) {
        float x = __ldg(&in[i]);
        float s, c;
        __sincosf(x, &s, &c);
        out[i] = __expf(x) + __exp10f(x) + __logf(x) + __log2f(x) + __log10f(x) + __powf(x, 2.0f) +
                 __sinf(x) + __cosf(x) + __tanf(x) + __fdividef(x, 3.0f) + __saturatef(x) + s + c;
    }
}

extern "C" void accurate_math(const float *in, double *out, int n) {
    for (int i = 0; i < n; ++i) {
        float x = in[i];
        double d = x;
        float s, c;
        sincosf(x, &s, &c);
        sincospif(x, &s, &c);
        double ds, dc;
        sincos(d, &ds, &dc);
        out[i] = rsqrtf(x) + rsqrt(d) + rcbrtf(x) + rcbrt(d) + exp10f(x) + exp10(x) + sinpif(x) + cospif(x) +
                 sinpi(d) + cospi(d) + erfinvf(x) + erfinv(d) + erfcinvf(x) + erfcinv(d) + normcdff(x) +
                 normcdf(d) + normcdfinvf(x) + normcdfinv(d) + erfcxf(x) + erfcx(d) + norm3df(x, x, x) +
                 rnorm3df(x, 1.0f, 2.0f) + rhypotf(x, 2.0f) + norm4d(d, d, d, d) + normf(n, in) +
                 fdividef(x, 3.0f) + s + c + ds + dc + min(x, 1.0f) + max(d, 2.0f) + min(i, n) + max(1u, (unsigned)i) +
                 __fadd_rn(x, 1.0f) + __fmul_rn(x, x) + __fmaf_rn(x, x, x) + __fma_rn(d, d, d) + __frcp_rn(x) +
                 __fsqrt_rn(x) + __frsqrt_rn(x) + __dadd_rn(d, d) + __dmul_rn(d, d) + __drcp_rn(d) +
                 __float2int_rn(x) + __float2int_rz(x) + __float2int_rd(x) + __float2int_ru(x) + __float2uint_rn(x) +
                 __float2ll_rn(x) + __int2float_rn(i) + __uint2float_rn(i) + __ll2float_rn(i) + __ll2float_rz(i) +
                 __double2float_rn(d) + __double2float_ru(d) + __double2int_rn(d) + __int_as_float(i) +
                 __float_as_int(x) + __uint_as_float(i) + __float_as_uint(x) +
                 __longlong_as_double(__double_as_longlong(d)) + __hiloint2double(__double2hiint(d), __double2loint(d)) +
                 CUDART_PI_F + CUDART_INF_F * 0 + FLT_EPSILON + expf(x) + erff(x) + lgammaf(x);
    }
}

extern "C" void half_ops(const __half *a, const __nv_bfloat16 *b, __half *out, __nv_bfloat16 *outb, int n) {
    for (int i = 0; i < n; ++i) {
        __half x = a[i], y = a[(i + 1) % n];
        __half2 p = __halves2half2(x, y);
        p = __hfma2(p, p, p) + __hmul2(p, p) - __h2div(p, __half2half2(y));
        s_half[i % 256] = __hadd(x, y) * __hsub(x, y) / __hfma(x, y, x);
        out[i] = s_half[i % 256] + __low2half(p) + hexp(x) + hlog(x) + hsqrt(x) + hrsqrt(x) + hrcp(x) +
                 hsin(x) + hcos(x) + hfloor(x) + hceil(x) + htrunc(x) + hrint(x) + hexp2(x) + hlog2(x) +
                 __hmax(x, y) + __hmin(x, y) + __habs(x) + __hneg(x) + __float2half_rz(1.0f) +
                 __double2half(0.1) + __int2half_rn(i) + __ushort_as_half(0x3c00);
        float2 f2 = __half22float2(p);
        if (__hlt(x, y) || __heq(x, y) || __hisnan(x) || __hisinf(y) || x > y) out[i] += __float2half(f2.x);
        __nv_bfloat16 u = b[i], v = b[(i + 1) % n];
        __nv_bfloat162 q = __floats2bfloat162_rn(__bfloat162float(u), 2.0f);
        q = __hfma2(q, q, q) * __bfloat162bfloat162(v);
        s_bf2[i % 64] = q;
        outb[i] = __hadd(u, v) * __hfma(u, v, u) + __low2bfloat16(q) + hexp(u) + hsqrt(v) + __int2bfloat16_rn(i) +
                  __double2bfloat16(0.25) + __nv_bfloat16(x) + __ll2bfloat16_rn((long long)i << 40);
        int as_int = x;
        unsigned long long as_ull = u;
        counters[i % warpSize] += as_int + (int)as_ull + __half2int_rn(x) + __bfloat162int_rz(u);
    }
}

extern "C" void atomics_and_bits(int *ip, unsigned *up, unsigned long long *ullp, float *fp, double *dp,
                                 __half *hp, __half2 *h2p, __nv_bfloat16 *bp, unsigned short *usp, int n) {
    for (int i = 0; i < n; ++i) {
        atomicAdd(ip, i);
        atomicSub(ip, 1);
        atomicExch(ip, i);
        atomicMin(ip, i);
        atomicMax_block(ip, i);
        atomicCAS(ip, i, i + 1);
        atomicAnd(ip, 0xff);
        atomicOr_system(ip, 0x100);
        atomicXor(ip, 3);
        atomicInc(up, 100u);
        atomicDec(up, 100u);
        atomicAdd(up, 2u);
        atomicAdd(ullp, 1ULL);
        atomicCAS(ullp, 1ULL, 2ULL);
        atomicMax((long long *)ullp, (long long)i);
        atomicAdd(fp, 1.0f);
        atomicExch(fp, 2.0f);
        atomicAdd(dp, 1.0);
        atomicAdd(hp, __float2half(1.0f));
        atomicAdd(h2p, __float2half2_rn(1.0f));
        atomicAdd(bp, __float2bfloat16(1.0f));
        atomicCAS(usp, (unsigned short)1, (unsigned short)2);
        unsigned v = (unsigned)i * 2654435761u;
        ip[1] += __popc(v) + __popcll(v) + __clz(i) + __clzll(i) + __ffs(i) + __ffsll(i) + (int)__brev(v) +
                 (int)__brevll(v) + (int)__byte_perm(v, ~v, 0x3210) + __mul24(i, i) + (int)__umul24(v, v) +
                 __mulhi(i, i) + (int)__umulhi(v, v) + (int)__mul64hi(i, i) + (int)__umul64hi(v, v) +
                 (int)__sad(i, 3, 1u) + (int)__usad(v, 3u, 1u) + __hadd(i, 1) + __rhadd(i, 1) + (int)__uhadd(v, 1u) +
                 (int)__urhadd(v, 1u) + (int)__funnelshift_l(v, ~v, i) + (int)__funnelshift_r(v, ~v, i) +
                 (int)__funnelshift_lc(v, ~v, i) + (int)__funnelshift_rc(v, ~v, i) + __dp4a(i, i, i);
        __stcg(&ip[2], i);
        __stcs(&fp[1], 1.0);
        ip[3] = __ldcg(&ip[2]) + __ldca(&ip[2]) + __ldcs(&ip[2]) + __ldlu(&ip[2]) + __ldcv(&ip[2]);
        __threadfence();
        __threadfence_block();
        __threadfence_system();
        __nanosleep(10);
        __prof_trigger(0);
        ip[4] = (int)(clock64() - clock());
        if (ip[5] == 12345) __trap();
        if (ip[5] == 54321) __brkpt();
    }
    s_vec[0] = make_float4(1.0f, 2.0f, 3.0f, (float)s_dims.x);
    fp[2] = __ldg(&s_vec[0]).w;
}

// Common CUDA idioms must resolve without ambiguity, as they do under nvcc.
#ifndef __device__
#define __device__
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }
__device__ float warp_sum(float v) { return v; }  // a user function next to the library's

extern "C" void typical_patterns(const float *x, const __half *h, const half2 *h2, const __nv_bfloat16 *b,
                                 float *out, __half *oh, __nv_bfloat16 *ob, unsigned n) {
    int lane = (int)(n % warpSize);
    for (unsigned i = 0; i < n; ++i) {
        float acc = 0.0f;
        acc += __half2float(h[i]) * 2.0f;
        acc += static_cast<float>(h[i]) + float(b[i]) + (float)__ldg(&h[i]);
        float f = h[i];
        double d = b[i];
        int k = h[i];
        bool nz = h[i];
        float2 f2 = __half22float2(h2[i]);
        acc += __low2float(h2[i]) + __high2float(h2[i]) + f2.x + f + (float)d + k + nz;
        acc = fmaf(__half2float(h[i]), __bfloat162float(b[i]), acc);
        acc = max(acc, 0.0f) + min(acc, 1.0) + fmaxf(acc, 0.f) + sigmoid(acc) + warp_sum(acc);
        unsigned m = min(i + 1, n) + max(i, 3u) + (unsigned)min(lane, (int)n) + min(i, lane);
        half hv = 0;
        hv = hv + __float2half(1.0f);
        hv += h[i] * h[i];
        if (hv > __float2half(0.0f) && __hgt(hv, h[i])) hv = __hmax(hv, h[i]);
        half2 p = __hmul2(h2[i], h2[i]);
        p = __hfma2(p, __float2half2_rn(0.5f), p);
        __half h_from_int = 3, h_from_double = 0.5;
        __nv_bfloat16 bv = x[i];
        bv = bv * b[i] + __float2bfloat16(1.0f);
        oh[i] = hv + __low2half(p) + h_from_int + h_from_double;
        ob[i] = bv;
        out[i] = acc + (float)m + expf(x[i]) + rsqrtf(x[i]) + tanhf(x[i]) + erff(x[i]);
    }
}

extern "C" void directed_rounding(const double *in, double *out, float *outf, int n) {
    for (int i = 0; i < n; ++i) {
        double d = in[i];
        float x = (float)d;
        out[i] = __dadd_rz(d, 1.0) + __dmul_rd(d, d) + __ddiv_ru(d, 3.0) + __dsqrt_rd(d) + __fma_rz(d, d, d) +
                 __drcp_ru(d) + __dsub_rd(d, 0.5);
        outf[i] = __fadd_ru(x, 1.0f) + __fmul_rz(x, x) + __fdiv_rd(x, 3.0f) + __fsqrt_ru(x) + __frcp_rz(x) +
                  __fmaf_rd(x, x, x) + __fmaf_ieee_ru(x, x, x) + __fsub_rz(x, 2.0f);
    }
}
