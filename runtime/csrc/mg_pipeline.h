// mg_pipeline.h -- CUDA's pipeline primitives (<cuda_pipeline.h>: __pipeline_memcpy_async,
// __pipeline_commit, __pipeline_wait_prior) for the mutagym CPU emulator.
//
// On a GPU an asynchronous copy (cp.async) lands in shared memory at some time before the issuing
// thread's wait retires its group; a read of the destination before that may see the old bytes.
// The emulator takes the latest moment every time: a copy reads its source when it is issued and
// writes its destination only when a `__pipeline_wait_prior` of the same thread retires its group
// (groups retire in commit order; wait_prior(N) leaves at most the N newest committed groups
// pending, N above 8 counting as 8 as in CUDA's header), or when the thread ends (the entry shim
// calls __mg_pipeline_thread_ends, see translate.py). So a missing wait, a wrong N or a missing
// commit reads stale shared memory in every thread order. A landed copy reports its bytes to the
// race detector as memcpy does (mg_libc.h), in the issuing thread: a tile read by other threads
// without a barrier after the wait is a data race.
//
// The pending copies live in the object's writable data, one ring of slots per thread; a landed
// slot is zeroed and an empty ring is reset, so between blocks the state is all zeros and copying it
// between the checked and the unchecked build (runner.cpp's use_object) changes nothing. A block
// that ended early (a sync error) may leave a ring behind: a marker in the block's shared memory,
// which the runner poisons before every block, tells the first copy of each block to reset them.
// What CUDA's header asserts (sizes 4, 8 and 16, zfill within the size, the destination in shared
// memory, both addresses aligned to the size) ends the run as a `crash` with a message naming it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#define __MG_PIPE_THREADS 1024   // the most threads a block has
#define __MG_PIPE_SLOTS 16       // copies one thread may have pending (an emulator limit)

struct __mg_pipe_copy {
    unsigned char bytes[16];
    unsigned char* dst;
    unsigned size;
    unsigned group;              // the number of commits before it was issued
};
struct __mg_pipe_ring {
    unsigned head, count;        // the oldest pending slot, and how many are pending
    unsigned committed;          // groups committed since the ring was last empty
};

static __mg_pipe_copy __mg_pipe_slots[__MG_PIPE_THREADS][__MG_PIPE_SLOTS];
static __mg_pipe_ring __mg_pipe_rings[__MG_PIPE_THREADS];
// Poisoned (all ones) before every block; zero once this block's rings were reset.
__attribute__((section("mg_shared"))) static unsigned __mg_pipe_block_stale;

// The block's static and dynamic shared memory (defined in mg_context.cpp).
extern "C" void __mg_shared_memory(unsigned char** static_begin, unsigned char** static_end,
                                   unsigned char** dynamic, unsigned long* dynamic_capacity);

__attribute__((noreturn, cold)) static inline void __mg_pipe_refuse(int line, const char* what,
                                                                    unsigned long value) {
    __mg_printf("submission.cu:%d: __pipeline_memcpy_async: block: [%u,%u,%u], thread: [%u,%u,%u] %s %lu\n",
                line, __mg_ctx.block_idx.x, __mg_ctx.block_idx.y, __mg_ctx.block_idx.z,
                __mg_ctx.thread_idx.x, __mg_ctx.thread_idx.y, __mg_ctx.thread_idx.z, what, value);
    __builtin_trap();
}

__attribute__((no_sanitize_thread)) static inline __mg_pipe_ring* __mg_pipe_ring_of_thread() {
    if (__mg_pipe_block_stale) {
        unsigned n = __mg_ctx.block_dim.x * __mg_ctx.block_dim.y * __mg_ctx.block_dim.z;
        __builtin_memset(__mg_pipe_rings, 0, sizeof(__mg_pipe_ring) * (n < __MG_PIPE_THREADS ? n : __MG_PIPE_THREADS));
        __mg_pipe_block_stale = 0;
    }
    unsigned linear = __mg_ctx.thread_idx.x +
                      __mg_ctx.block_dim.x * (__mg_ctx.thread_idx.y + __mg_ctx.block_dim.y * __mg_ctx.thread_idx.z);
    return &__mg_pipe_rings[linear % __MG_PIPE_THREADS];
}

__attribute__((no_sanitize_thread)) static inline bool __mg_pipe_in_shared(const unsigned char* p, size_t n) {
    unsigned char *begin, *end, *dynamic;
    unsigned long capacity;
    __mg_shared_memory(&begin, &end, &dynamic, &capacity);
    return (p >= begin && p + n <= end) || (p >= dynamic && p + n <= dynamic + capacity);
}

// Lands the oldest pending copy of ring `r` (slots `s`).
__attribute__((no_sanitize_thread)) static inline void __mg_pipe_land(__mg_pipe_ring* r, __mg_pipe_copy* s) {
    __mg_pipe_copy* c = &s[r->head];
#if defined(__SANITIZE_THREAD__)
    __tsan_write_range(c->dst, (long)c->size);   // first: the detector compares the bytes after it
#endif
    __builtin_memcpy(c->dst, c->bytes, c->size);
    __builtin_memset(c, 0, sizeof *c);
    r->head = (r->head + 1) % __MG_PIPE_SLOTS;
    if (--r->count == 0) r->head = r->committed = 0;
}

__attribute__((no_sanitize_thread)) static inline void __mg_pipeline_memcpy_async(
        int line, void* dst_shared, const void* src_global, size_t size_and_align, size_t zfill = 0) {
    unsigned char* dst = (unsigned char*)dst_shared;
    if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16)
        __mg_pipe_refuse(line, "size_and_align is not 4, 8 or 16:", size_and_align);
    if (zfill > size_and_align) __mg_pipe_refuse(line, "zfill is larger than size_and_align:", zfill);
    if ((uintptr_t)dst % size_and_align)
        __mg_pipe_refuse(line, "the destination is not aligned to size_and_align:", size_and_align);
    if ((uintptr_t)src_global % size_and_align)
        __mg_pipe_refuse(line, "the source is not aligned to size_and_align:", size_and_align);
    if (!__mg_pipe_in_shared(dst, size_and_align))
        __mg_pipe_refuse(line, "the destination is not shared memory; bytes:", size_and_align);
    __mg_pipe_ring* r = __mg_pipe_ring_of_thread();
    if (r->count == __MG_PIPE_SLOTS)
        __mg_pipe_refuse(line, "pending copies of one thread exceed the emulator's limit of", __MG_PIPE_SLOTS);
    __mg_pipe_copy* c = &__mg_pipe_slots[r - __mg_pipe_rings][(r->head + r->count) % __MG_PIPE_SLOTS];
    size_t read = size_and_align - zfill;
#if defined(__SANITIZE_THREAD__)
    if (read) __tsan_read_range(const_cast<void*>(src_global), (long)read);
#endif
    __builtin_memcpy(c->bytes, src_global, read);
    __builtin_memset(c->bytes + read, 0, 16 - read);
    c->dst = dst;
    c->size = (unsigned)size_and_align;
    c->group = r->committed;
    r->count++;
}

__attribute__((no_sanitize_thread)) static inline void __mg_pipeline_commit() {
    __mg_pipe_ring* r = __mg_pipe_ring_of_thread();
    if (r->count) r->committed++;   // an empty ring has nothing a later wait could retire
}

__attribute__((no_sanitize_thread)) static inline void __mg_pipeline_wait_prior(size_t prior) {
    __mg_pipe_ring* r = __mg_pipe_ring_of_thread();
    unsigned keep = prior < 8 ? (unsigned)prior : 8;
    unsigned retire_below = r->committed > keep ? r->committed - keep : 0;
    __mg_pipe_copy* s = __mg_pipe_slots[r - __mg_pipe_rings];
    while (r->count && s[r->head].group < retire_below) __mg_pipe_land(r, s);
}

// Every copy still pending lands: called after the kernel returns in each thread.
__attribute__((no_sanitize_thread)) static inline void __mg_pipeline_thread_ends() {
    __mg_pipe_ring* r = __mg_pipe_ring_of_thread();
    __mg_pipe_copy* s = __mg_pipe_slots[r - __mg_pipe_rings];
    while (r->count) __mg_pipe_land(r, s);
}

// Macros, as memcpy is (mg_libc.h): the copy learns the line it is called from.
#define __pipeline_memcpy_async(...) __mg_pipeline_memcpy_async(__LINE__, __VA_ARGS__)
#define __pipeline_commit() __mg_pipeline_commit()
#define __pipeline_wait_prior(prior) __mg_pipeline_wait_prior(prior)
