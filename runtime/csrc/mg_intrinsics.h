/*
 * mg_intrinsics.h -- CUDA integer intrinsics, cache-hinted loads/stores, fences and timers for the
 * mutagym CPU emulator.
 *
 * Integer intrinsics (__popc, __clz, __brev, __byte_perm, __funnelshift_*, __mulhi, __sad, ...)
 * give the GPU's exact results; bit counts are written out rather than using __builtin_popcount,
 * which without -mpopcnt becomes a call into libgcc. __hadd(int, int) is CUDA's integer average
 * (the __half overload lives in mg_half.h).
 * Cache-hinted loads (__ldg, __ldcg, ...) and stores (__stcg, ...) are plain accesses.
 * Fences are compiler barriers (cooperatively scheduled fibers on one OS thread are sequentially
 * consistent) that the race detector sees as releases. __nanosleep and __prof_trigger do nothing.
 * clock()/clock64() return the runner's counter (`__mg_clock`, shared by all threads): it starts at
 * a value drawn per case and grows by a step drawn per case, so orderings are monotonic and no
 * value or difference is one a kernel could recognise the emulator by; it is not time.
 * __trap() and __brkpt() execute a trap instruction (the run ends as a crash).
 */
#pragma once

#include <stdint.h>
#include "mg_types.h"
#include "mg_half.h"
#include "mg_bf16.h"

/* ------------------------------------------------------------------------------------------ */
/* Bit manipulation                                                                           */
/* ------------------------------------------------------------------------------------------ */

static inline int __popcll(unsigned long long x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}
static inline int __popc(unsigned int x) { return __popcll((unsigned long long)x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return x == 0 ? 0 : __builtin_ctz((unsigned int)x) + 1; }
static inline int __ffsll(long long x) { return x == 0 ? 0 : __builtin_ctzll((unsigned long long)x) + 1; }
static inline unsigned long long __brevll(unsigned long long x) {
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((x & 0x0f0f0f0f0f0f0f0fULL) << 4);
    x = ((x >> 8) & 0x00ff00ff00ff00ffULL) | ((x & 0x00ff00ff00ff00ffULL) << 8);
    x = ((x >> 16) & 0x0000ffff0000ffffULL) | ((x & 0x0000ffff0000ffffULL) << 16);
    return (x >> 32) | (x << 32);
}
static inline unsigned int __brev(unsigned int x) { return (unsigned int)(__brevll((unsigned long long)x) >> 32); }

/* __byte_perm(x, y, s): byte n of the result is byte (s >> 4n) & 7 of the 8-byte value y:x. */
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    uint64_t v = ((uint64_t)y << 32) | (uint64_t)x;
    unsigned int r = 0;
    for (int n = 0; n < 4; ++n) {
        unsigned int sel = (s >> (4 * n)) & 7u;
        r |= (unsigned int)((v >> (8 * sel)) & 0xffu) << (8 * n);
    }
    return r;
}

/* Funnel shifts on the 64-bit value hi:lo. _l/_r use shift & 31, _lc/_rc clamp shift to 32. */
static inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned int)((v << (shift & 31u)) >> 32);
}
static inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned int)((v << (shift < 32u ? shift : 32u)) >> 32);
}
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned int)(v >> (shift & 31u));
}
static inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    uint64_t v = ((uint64_t)hi << 32) | lo;
    return (unsigned int)(v >> (shift < 32u ? shift : 32u));
}

/* ------------------------------------------------------------------------------------------ */
/* Integer arithmetic                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* 24-bit multiplies: operands are the low 24 bits (sign-extended for __mul24); the result is the
 * low 32 bits of the 48-bit product. */
static inline int __mul24(int x, int y) {
    int64_t a = (int32_t)((uint32_t)x << 8) >> 8, b = (int32_t)((uint32_t)y << 8) >> 8;
    return (int)(uint32_t)(uint64_t)(a * b);
}
static inline unsigned int __umul24(unsigned int x, unsigned int y) {
    return (unsigned int)((uint64_t)(x & 0xffffffu) * (uint64_t)(y & 0xffffffu));
}
static inline int __mulhi(int x, int y) { return (int)(((int64_t)x * (int64_t)y) >> 32); }
static inline unsigned int __umulhi(unsigned int x, unsigned int y) { return (unsigned int)(((uint64_t)x * y) >> 32); }
static inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * (__int128)y) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
    return (unsigned long long)(((unsigned __int128)x * (unsigned __int128)y) >> 64);
}
/* |x - y| + z */
static inline unsigned int __sad(int x, int y, unsigned int z) {
    return (x > y ? (unsigned int)x - (unsigned int)y : (unsigned int)y - (unsigned int)x) + z;
}
static inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
/* averages without intermediate overflow: (x + y) >> 1 and (x + y + 1) >> 1 */
static inline int __hadd(int x, int y) { return (int)(((int64_t)x + y) >> 1); }
static inline int __rhadd(int x, int y) { return (int)(((int64_t)x + y + 1) >> 1); }
static inline unsigned int __uhadd(unsigned int x, unsigned int y) { return (unsigned int)(((uint64_t)x + y) >> 1); }
static inline unsigned int __urhadd(unsigned int x, unsigned int y) { return (unsigned int)(((uint64_t)x + y + 1) >> 1); }
/* four-way byte dot product with accumulate */
static inline int __dp4a(int a, int b, int c) {
    int r = c;
    for (int i = 0; i < 4; ++i) r += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
    return r;
}
static inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    unsigned int r = c;
    for (int i = 0; i < 4; ++i) r += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
    return r;
}
static inline int __dp4a(char4 a, char4 b, int c) {
    return c + a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
static inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) {
    return c + (unsigned int)(a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w);
}

/* ------------------------------------------------------------------------------------------ */
/* Cache-hinted loads and stores                                                              */
/* ------------------------------------------------------------------------------------------ */

/* Only for the element types CUDA declares them for (sm_32_intrinsics.h, cuda_fp16.h, cuda_bf16.h):
 * no bool, no 3-vectors, no structs of the kernel's own. */
template <class T> struct __mg_cached {};
#define __MG_CACHED(T) template <> struct __mg_cached<T> { typedef T type; };
__MG_CACHED(char) __MG_CACHED(signed char) __MG_CACHED(unsigned char) __MG_CACHED(short)
__MG_CACHED(unsigned short) __MG_CACHED(int) __MG_CACHED(unsigned int) __MG_CACHED(long)
__MG_CACHED(unsigned long) __MG_CACHED(long long) __MG_CACHED(unsigned long long) __MG_CACHED(float)
__MG_CACHED(double) __MG_CACHED(char2) __MG_CACHED(char4) __MG_CACHED(uchar2) __MG_CACHED(uchar4)
__MG_CACHED(short2) __MG_CACHED(short4) __MG_CACHED(ushort2) __MG_CACHED(ushort4) __MG_CACHED(int2)
__MG_CACHED(int4) __MG_CACHED(uint2) __MG_CACHED(uint4) __MG_CACHED(longlong2) __MG_CACHED(ulonglong2)
__MG_CACHED(float2) __MG_CACHED(float4) __MG_CACHED(double2)
__MG_CACHED(__half) __MG_CACHED(__half2) __MG_CACHED(__nv_bfloat16) __MG_CACHED(__nv_bfloat162)
#undef __MG_CACHED
template <class T> static inline typename __mg_cached<T>::type __ldg(const T *p) { return *p; }
template <class T> static inline typename __mg_cached<T>::type __ldcg(const T *p) { return *p; }
template <class T> static inline typename __mg_cached<T>::type __ldca(const T *p) { return *p; }
template <class T> static inline typename __mg_cached<T>::type __ldcs(const T *p) { return *p; }
template <class T> static inline typename __mg_cached<T>::type __ldlu(const T *p) { return *p; }
template <class T> static inline typename __mg_cached<T>::type __ldcv(const T *p) { return *p; }
template <class T> static inline void __stcg(T *p, typename __mg_cached<T>::type v) { *p = v; }
template <class T> static inline void __stcs(T *p, typename __mg_cached<T>::type v) { *p = v; }
template <class T> static inline void __stwb(T *p, typename __mg_cached<T>::type v) { *p = v; }
template <class T> static inline void __stwt(T *p, typename __mg_cached<T>::type v) { *p = v; }

/* ------------------------------------------------------------------------------------------ */
/* Fences, timers, traps                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* A fence tells the runner (race.h): a fence then an atomic or volatile store releases the
 * thread's earlier writes to other blocks. */
extern "C" void __mg_race_fence(void);
static inline void __threadfence(void) { __mg_race_fence(); __asm__ __volatile__("" ::: "memory"); }
static inline void __threadfence_block(void) { __mg_race_fence(); __asm__ __volatile__("" ::: "memory"); }
static inline void __threadfence_system(void) { __mg_race_fence(); __asm__ __volatile__("" ::: "memory"); }
static inline void __nanosleep(unsigned int) {}
static inline void __prof_trigger(int) {}
static inline void __trap(void) { __builtin_trap(); }
static inline void __brkpt(void) { __builtin_trap(); }

extern "C" unsigned long long __mg_clock(void);    /* runner.cpp: the case's counter */
static inline long long clock64(void) { return (long long)__mg_clock(); }
/* clock() has C linkage and libc's signature so that it agrees with <time.h> whether that is
 * included before, after, or not at all; always inlined, so libc's clock is never called. */
extern "C" inline __attribute__((visibility("hidden"), always_inline)) long clock(void) noexcept {
    return (long)__mg_clock();
}
