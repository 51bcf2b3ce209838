// mutagym's CUDA emulation header: what a kernel's device code sees when the CPU emulator builds it.
//
// g++ compiles the submission together with this header into a shared object that the sandboxed
// runner (runner.cpp) loads. Each CUDA thread of a block is a fiber when the kernel uses barriers
// or warp collectives, and a plain function call otherwise. Thread indices live in `__mg_ctx`, which
// the runner rewrites before it resumes a thread; barriers and warp collectives are calls into the
// runner, which is where threads switch. Nothing here may need a static initialiser or a symbol
// outside the math library: the runtime rejects built kernels that do.
#pragma once

// C's <math.h>, not libstdc++'s wrapper (see mg_cmath.h, which restores the C++ overloads).
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS 1
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <float.h>
#include <limits.h>
#include "mg_cmath.h"
namespace std {  // what <cstddef> and <cstdint> declare in std:: (the submission may include them)
using ::size_t; using ::ptrdiff_t; using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t; using ::intptr_t; using ::uintptr_t;
}
typedef unsigned int uint;      // as nvcc's host headers declare them
typedef unsigned short ushort;
typedef unsigned long ulong;

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
// Static shared arrays live in one section so the runner can poison them before every block
// (shared memory is undefined when a block starts). One block runs at a time per process, so a
// static variable is exactly per-block storage.
#define __shared__ __attribute__((section("mg_shared"), aligned(16))) static

#include "mg_types.h"
#include "mg_half.h"
#include "mg_bf16.h"
#include "mg_math.h"
#include "mg_rounding.h"
#include "mg_atomic.h"
#include "mg_intrinsics.h"

// ---------------------------------------------------------------- thread indices
extern "C" {
struct __mg_ctx_t {          // plain uint3s: a dim3 member would need a constructor at load time
    uint3 thread_idx;
    uint3 block_idx;
    uint3 block_dim;
    uint3 grid_dim;
};
extern struct __mg_ctx_t __mg_ctx __attribute__((visibility("hidden")));
}
// `struct dim3` names the type even where a kernel's variable or parameter is called dim3.
#define threadIdx (*(const struct uint3*)&__mg_ctx.thread_idx)
#define blockIdx (*(const struct uint3*)&__mg_ctx.block_idx)
#define blockDim (*(const struct dim3*)&__mg_ctx.block_dim)
#define gridDim (*(const struct dim3*)&__mg_ctx.grid_dim)

// ---------------------------------------------------------------- runner entry points
// Implemented in runner.cpp; every call may switch to another thread of the block.
extern "C" {
void __mg_syncthreads(int line, int site);
int __mg_syncthreads_op(int line, int site, int op, int predicate);
unsigned long long __mg_warp_op(int line, unsigned mask, int kind, unsigned long long value,
                                int arg, int width);
unsigned __mg_activemask(void);
int __mg_printf(const char* format, ...);
}

enum {
    __MG_SYNC_COUNT = 1, __MG_SYNC_AND = 2, __MG_SYNC_OR = 3,
};
enum {
    __MG_WARP_SYNC = 0, __MG_SHFL_IDX = 1, __MG_SHFL_UP = 2, __MG_SHFL_DOWN = 3, __MG_SHFL_XOR = 4,
    __MG_BALLOT = 5, __MG_ANY = 6, __MG_ALL = 7, __MG_MATCH_ANY = 8, __MG_MATCH_ALL = 9,
    __MG_REDUCE_ADD = 10, __MG_REDUCE_MIN = 11, __MG_REDUCE_MAX = 12, __MG_REDUCE_AND = 13,
    __MG_REDUCE_OR = 14, __MG_REDUCE_XOR = 15,
};

// Each textual barrier is its own site (__COUNTER__), so two barriers on one line still diverge.
#define __syncthreads() __mg_syncthreads(__LINE__, __COUNTER__)
#define __syncthreads_count(p) __mg_syncthreads_op(__LINE__, __COUNTER__, __MG_SYNC_COUNT, (p) ? 1 : 0)
#define __syncthreads_and(p) __mg_syncthreads_op(__LINE__, __COUNTER__, __MG_SYNC_AND, (p) ? 1 : 0)
#define __syncthreads_or(p) __mg_syncthreads_op(__LINE__, __COUNTER__, __MG_SYNC_OR, (p) ? 1 : 0)
#define __activemask() __mg_activemask()
#define printf __mg_printf

#include "mg_libc.h"
#include "mg_pipeline.h"

// Calls an entry kernel with arguments unpacked from the runner's slots, typed by the kernel's own
// signature (so a `const float* __restrict__` parameter receives exactly that).
template <unsigned... I> struct __mg_seq {};
template <unsigned N, unsigned... I> struct __mg_make_seq : __mg_make_seq<N - 1, N - 1, I...> {};
template <unsigned... I> struct __mg_make_seq<0, I...> { typedef __mg_seq<I...> type; };
template <class T> static inline T __mg_arg(void* slot) {
    static_assert(sizeof(T) <= 8, "kernel arguments are pointers or scalars");
    T v;
    __builtin_memcpy(&v, slot, sizeof(T));
    return v;
}
template <class... P, unsigned... I>
static inline void __mg_invoke(void (*kernel)(P...), void** args, __mg_seq<I...>) {
    kernel(__mg_arg<P>(args[I])...);
}
template <class... P>
static inline void __mg_call(void (*kernel)(P...), void** args) {
    __mg_invoke(kernel, args, typename __mg_make_seq<sizeof...(P)>::type());
}

template <class T>
static inline unsigned long long __mg_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp collectives move at most 8 bytes a lane");
    unsigned long long bits = 0;
    __builtin_memcpy(&bits, &v, sizeof(T));
    return bits;
}
template <class T>
static inline T __mg_from_bits(unsigned long long bits) {
    T v;
    __builtin_memcpy(&v, &bits, sizeof(T));
    return v;
}

static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    __mg_warp_op(0, mask, __MG_WARP_SYNC, 0, 0, 32);
}
// The warp collectives take exactly CUDA's overloads (sm_30_intrinsics.h, cuda_fp16.h,
// cuda_bf16.h; sm_70_rt.h for match): plain functions, so overload resolution is CUDA's (a
// `short` promotes to the int overload and a float2 has none). A contracted __half / __half2
// product (mg_half.h's __mg_hprod, __mg_hprod2) converts to its base: the rounded product.
#define __MG_SHFL(T)                                                                                    \
    static inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {                   \
        return __mg_from_bits<T>(__mg_warp_op(0, mask, __MG_SHFL_IDX, __mg_bits(var), src_lane, width)); \
    }                                                                                                   \
    static inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {              \
        return __mg_from_bits<T>(__mg_warp_op(0, mask, __MG_SHFL_UP, __mg_bits(var), (int)delta, width)); \
    }                                                                                                   \
    static inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {            \
        return __mg_from_bits<T>(__mg_warp_op(0, mask, __MG_SHFL_DOWN, __mg_bits(var), (int)delta, width)); \
    }                                                                                                   \
    static inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {              \
        return __mg_from_bits<T>(__mg_warp_op(0, mask, __MG_SHFL_XOR, __mg_bits(var), lane_mask, width)); \
    }
__MG_SHFL(int)
__MG_SHFL(unsigned int)
__MG_SHFL(long)
__MG_SHFL(unsigned long)
__MG_SHFL(long long)
__MG_SHFL(unsigned long long)
__MG_SHFL(float)
__MG_SHFL(double)
__MG_SHFL(__half)
__MG_SHFL(__half2)
__MG_SHFL(__nv_bfloat16)
__MG_SHFL(__nv_bfloat162)
#undef __MG_SHFL
static inline unsigned __ballot_sync(unsigned mask, int predicate) {
    return (unsigned)__mg_warp_op(0, mask, __MG_BALLOT, predicate != 0, 0, 32);
}
static inline int __any_sync(unsigned mask, int predicate) {
    return (int)__mg_warp_op(0, mask, __MG_ANY, predicate != 0, 0, 32);
}
static inline int __all_sync(unsigned mask, int predicate) {
    return (int)__mg_warp_op(0, mask, __MG_ALL, predicate != 0, 0, 32);
}
#define __MG_MATCH(T)                                                                      \
    static inline unsigned __match_any_sync(unsigned mask, T value) {                      \
        return (unsigned)__mg_warp_op(0, mask, __MG_MATCH_ANY, __mg_bits(value), 0, 32);   \
    }                                                                                      \
    static inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {           \
        unsigned long long r = __mg_warp_op(0, mask, __MG_MATCH_ALL, __mg_bits(value), 0, 32); \
        *pred = r != 0;                                                                    \
        return (unsigned)r;                                                                \
    }
__MG_MATCH(unsigned)
__MG_MATCH(int)
__MG_MATCH(unsigned long)
__MG_MATCH(long)
__MG_MATCH(unsigned long long)
__MG_MATCH(long long)
__MG_MATCH(float)
__MG_MATCH(double)
#undef __MG_MATCH
#define __MG_WARP_REDUCE(name, kind, T)                                                  \
    static inline T name(unsigned mask, T value) {                                       \
        return (T)__mg_warp_op(0, mask, kind, (unsigned long long)(unsigned)value,       \
                               sizeof(T) == 4 && (T)-1 < (T)0 ? 1 : 0, 32);              \
    }
__MG_WARP_REDUCE(__reduce_add_sync, __MG_REDUCE_ADD, unsigned)
__MG_WARP_REDUCE(__reduce_add_sync, __MG_REDUCE_ADD, int)
__MG_WARP_REDUCE(__reduce_min_sync, __MG_REDUCE_MIN, unsigned)
__MG_WARP_REDUCE(__reduce_min_sync, __MG_REDUCE_MIN, int)
__MG_WARP_REDUCE(__reduce_max_sync, __MG_REDUCE_MAX, unsigned)
__MG_WARP_REDUCE(__reduce_max_sync, __MG_REDUCE_MAX, int)
__MG_WARP_REDUCE(__reduce_and_sync, __MG_REDUCE_AND, unsigned)
__MG_WARP_REDUCE(__reduce_or_sync, __MG_REDUCE_OR, unsigned)
__MG_WARP_REDUCE(__reduce_xor_sync, __MG_REDUCE_XOR, unsigned)
#undef __MG_WARP_REDUCE

#include "mg_cooperative_groups.h"
#include "mg_wmma.h"
