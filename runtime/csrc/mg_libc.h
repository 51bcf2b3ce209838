// mg_libc.h -- the C library CUDA device code has without an include: memcpy, memset, assert
// (printf is in mutagym_cuda.h), for the mutagym CPU emulator.
//
// memcpy and memset are macros for functions of the emulator's own (as printf is), so a kernel's
// call never binds to the C library by name, and `std::memcpy` works as well. Under the race
// detector's instrumentation they tell the runner which bytes they read and write: g++ instruments
// a copy of constant size itself, but a copy of run-time size becomes a call to the C library's
// memcpy, which the instrumentation does not see.
//
// assert(e) behaves as CUDA's device assert: when e is false it writes CUDA's message
// ("file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `e` failed.") to the printf
// buffer and stops the kernel with a trap, which ends the run as a `crash`. As under NVRTC,
// defining NDEBUG in the kernel does not turn it off (the macro is defined before the kernel).
#pragma once

#include <stddef.h>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_read_range(void* address, long size);   // g++'s own declarations
extern "C" void __tsan_write_range(void* address, long size);
#endif

static inline void* __mg_memcpy(void* dst, const void* src, size_t n) {
#if defined(__SANITIZE_THREAD__)
    __tsan_read_range(const_cast<void*>(src), (long)n);
    __tsan_write_range(dst, (long)n);
#endif
    return __builtin_memcpy(dst, src, n);
}
static inline void* __mg_memset(void* dst, int value, size_t n) {
#if defined(__SANITIZE_THREAD__)
    __tsan_write_range(dst, (long)n);
#endif
    return __builtin_memset(dst, value, n);
}
namespace std { using ::__mg_memcpy; using ::__mg_memset; }
#define memcpy __mg_memcpy
#define memset __mg_memset

__attribute__((noreturn, cold)) static inline void __mg_assert_failed(const char* expr, int line,
                                                                      const char* function) {
    __mg_printf("submission.cu:%d: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
                line, function, __mg_ctx.block_idx.x, __mg_ctx.block_idx.y, __mg_ctx.block_idx.z,
                __mg_ctx.thread_idx.x, __mg_ctx.thread_idx.y, __mg_ctx.thread_idx.z, expr);
    __builtin_trap();
}
#define assert(e) (static_cast<bool>(e) ? (void)0 : __mg_assert_failed(#e, __LINE__, __func__))
