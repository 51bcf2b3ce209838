// mg_context.cpp -- the part of every kernel object that the runner calls while it loads it.
//
// The runner asks a freshly loaded object where its thread indices and shared memory are
// (`__mg_context`, `__mg_shared_memory`), under the looser of its two seccomp filters. So these
// functions are never compiled with a submission's text: they are built once per set of flags
// from this file alone (toolchain.context_object) and linked into every kernel object, where no
// macro or declaration of a submission can reach them. The dynamic shared memory block and the
// thread-index record live here too, beside the functions that hand them out.
#include "mutagym_cuda.h"

struct __mg_ctx_t __mg_ctx;
// 48 KiB: what a block may ask for without opting in to more (submission.MAX_DYNAMIC_SHARED_BYTES).
alignas(16) unsigned char __mg_dynamic_smem[48 * 1024];

extern "C" {
// The section bounds are the linker's, for the submission's `__shared__` arrays (mutagym_cuda.h).
extern unsigned char __start_mg_shared[] __attribute__((weak, visibility("hidden")));
extern unsigned char __stop_mg_shared[] __attribute__((weak, visibility("hidden")));

__attribute__((visibility("default"))) struct __mg_ctx_t* __mg_context(void) { return &__mg_ctx; }

__attribute__((visibility("default"))) void __mg_shared_memory(unsigned char** static_begin,
                                                               unsigned char** static_end,
                                                               unsigned char** dynamic,
                                                               unsigned long* dynamic_capacity) {
    *static_begin = __start_mg_shared;
    *static_end = __stop_mg_shared;
    *dynamic = __mg_dynamic_smem;
    *dynamic_capacity = sizeof __mg_dynamic_smem;
}
}
