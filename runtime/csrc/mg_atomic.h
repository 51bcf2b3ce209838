/*
 * mg_atomic.h -- CUDA atomic functions for the mutagym CPU emulator.
 *
 * The emulator runs all threads of a block cooperatively on one OS thread, and a thread gives
 * up the CPU only inside a barrier/shuffle call, so an atomic is a plain read-modify-write that
 * returns the old value: no other thread can run in between. Every function also exists with
 * the _block and _system suffixes where CUDA has them (same behaviour: scopes make no difference
 * here). Exactly CUDA's overloads at the gate's architecture (tests/runtime/test_cuda_surface.py):
 * no floating atomicMin/atomicMax, no vector atomicAdd below sm_90.
 *
 * Semantics follow the CUDA programming guide: atomicInc/atomicDec wrap at `val`, atomicCAS
 * stores only on equality. Float atomicAdd rounds like an ordinary add;
 * the order in which threads' additions happen is the scheduler's thread order (a GPU's order
 * is unspecified), so a sum that depends on it differs between schedules as it would on a GPU.
 */
#pragma once

#include "mg_types.h"
#include "mg_half.h"
#include "mg_bf16.h"

/* Every atomic tells the runner first (race.h): an atomic access never races, orders across
 * blocks (acquire, and release after a __threadfence), and a thread that keeps polling one address
 * without seeing it change is reported. The bodies themselves are not instrumented for races. */
extern "C" void __mg_race_atomic(const void* address, unsigned size);
#define __MG_ATOMIC_FN(R, name, params, body)                                                      \
    __attribute__((no_sanitize_thread)) static inline R name params {                             \
        __mg_race_atomic((const void*)address, (unsigned)sizeof *address);                         \
        body                                                                                       \
    }

/* Defines name, name_block and name_system with one body. */
#define __MG_ATOMIC(R, name, params, body)                                                         \
    __MG_ATOMIC_FN(R, name, params, body)                                                          \
    __MG_ATOMIC_FN(R, name##_block, params, body)                                                  \
    __MG_ATOMIC_FN(R, name##_system, params, body)

#define __MG_ATOMIC_RMW(name, T, expr)                                                             \
    __MG_ATOMIC(T, name, (T * address, T val), { T old = *address; *address = (expr); return old; })

/* add / sub */
__MG_ATOMIC_RMW(atomicAdd, int, old + val)
__MG_ATOMIC_RMW(atomicAdd, unsigned int, old + val)
__MG_ATOMIC_RMW(atomicAdd, unsigned long long, old + val)
/* the barrier keeps a product passed as val from being fused with the add (a GPU never fuses) */
__MG_ATOMIC_RMW(atomicAdd, float, old + __mg_fbar(val))
__MG_ATOMIC_RMW(atomicAdd, double, old + __mg_dbar(val))
/* the 16-bit float atomicAdd has no _block / _system forms in CUDA */
#define __MG_ATOMIC_ADD16(T, add)                                                                  \
    __MG_ATOMIC_FN(T, atomicAdd, (T * address, T val), { T old = *address; *address = add(old, val); return old; })
__MG_ATOMIC_ADD16(__half, __hadd)
__MG_ATOMIC_ADD16(__half2, __hadd2)
__MG_ATOMIC_ADD16(__nv_bfloat16, __hadd)
__MG_ATOMIC_ADD16(__nv_bfloat162, __hadd2)
#undef __MG_ATOMIC_ADD16
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900   /* CUDA has the vector atomicAdd from sm_90 on */
__MG_ATOMIC_RMW(atomicAdd, float2, make_float2(old.x + __mg_fbar(val.x), old.y + __mg_fbar(val.y)))
__MG_ATOMIC_RMW(atomicAdd, float4, make_float4(old.x + __mg_fbar(val.x), old.y + __mg_fbar(val.y),
                                              old.z + __mg_fbar(val.z), old.w + __mg_fbar(val.w)))
#endif
__MG_ATOMIC_RMW(atomicSub, int, old - val)
__MG_ATOMIC_RMW(atomicSub, unsigned int, old - val)

/* exchange */
__MG_ATOMIC_RMW(atomicExch, int, val)
__MG_ATOMIC_RMW(atomicExch, unsigned int, val)
__MG_ATOMIC_RMW(atomicExch, unsigned long long, val)
__MG_ATOMIC_RMW(atomicExch, float, val)

/* min / max */
__MG_ATOMIC_RMW(atomicMin, int, val < old ? val : old)
__MG_ATOMIC_RMW(atomicMin, unsigned int, val < old ? val : old)
__MG_ATOMIC_RMW(atomicMin, long long, val < old ? val : old)
__MG_ATOMIC_RMW(atomicMin, unsigned long long, val < old ? val : old)
__MG_ATOMIC_RMW(atomicMax, int, val > old ? val : old)
__MG_ATOMIC_RMW(atomicMax, unsigned int, val > old ? val : old)
__MG_ATOMIC_RMW(atomicMax, long long, val > old ? val : old)
__MG_ATOMIC_RMW(atomicMax, unsigned long long, val > old ? val : old)

/* increment / decrement with wrap-around:
 * atomicInc stores (old >= val) ? 0 : old + 1; atomicDec stores (old == 0 || old > val) ? val : old - 1 */
__MG_ATOMIC_RMW(atomicInc, unsigned int, (old >= val) ? 0u : old + 1u)
__MG_ATOMIC_RMW(atomicDec, unsigned int, (old == 0u || old > val) ? val : old - 1u)

/* bitwise */
__MG_ATOMIC_RMW(atomicAnd, int, old & val)
__MG_ATOMIC_RMW(atomicAnd, unsigned int, old & val)
__MG_ATOMIC_RMW(atomicAnd, unsigned long long, old & val)
__MG_ATOMIC_RMW(atomicOr, int, old | val)
__MG_ATOMIC_RMW(atomicOr, unsigned int, old | val)
__MG_ATOMIC_RMW(atomicOr, unsigned long long, old | val)
__MG_ATOMIC_RMW(atomicXor, int, old ^ val)
__MG_ATOMIC_RMW(atomicXor, unsigned int, old ^ val)
__MG_ATOMIC_RMW(atomicXor, unsigned long long, old ^ val)

/* compare and swap: stores val if *address == compare; returns the old value */
#define __MG_ATOMIC_CAS(T)                                                                         \
    __MG_ATOMIC(T, atomicCAS, (T * address, T compare, T val),                                     \
                { T old = *address; if (old == compare) *address = val; return old; })
__MG_ATOMIC_CAS(int)
__MG_ATOMIC_CAS(unsigned int)
__MG_ATOMIC_CAS(unsigned long long)
/* CUDA has the 16-bit atomicCAS without _block / _system forms */
__MG_ATOMIC_FN(unsigned short, atomicCAS, (unsigned short * address, unsigned short compare, unsigned short val),
               { unsigned short old = *address; if (old == compare) *address = val; return old; })

#undef __MG_ATOMIC_CAS
#undef __MG_ATOMIC_RMW
#undef __MG_ATOMIC
#undef __MG_ATOMIC_FN
