// mutagym's sandboxed kernel runner: loads one built kernel, runs a batch of cases, reports outcomes.
//
// The Python parent (runtime/cpu_backend.py) lays every buffer of every case out in a memfd with
// guard pages, poisons outputs and scratch, and sends a text request on stdin; the kernel's objects
// come as open descriptors, so the runner is told no path of the host, and it starts with an empty
// environment. The runner maps the memfd, protects guard pages and inputs and allocates everything
// it will need. Then it closes the jail before anything of the submission runs: an empty root (a
// mount namespace whose root is a tmpfs holding the objects and nothing else, where the machine
// allows one), resource limits, an unprivileged identity when started as root, no_new_privs, and a
// first seccomp filter that allows only what loading a shared object needs (read-only opens,
// mappings, writes to stdout). Only then are the kernel's objects mapped (the parent has checked
// them for initialisers and foreign symbols, but load-time code such as an ifunc resolver would run
// inside dlopen); a second filter takes away opening files before any function of an object is
// called, and a third, as tight as seccomp strict mode, closes the sandbox: from then on the kernel
// can compute on its buffers and nothing else. Each case ends with a line on stdout; a fault writes
// its own line from the signal handler and exits. Every exit is a raw one, so no exit handler or
// .fini_array of the object ever runs. Kernel code shares this process, so it can write lines of
// its own: the parent reads every line after `loading` as the kernel's word (runtime/runner_reports.py).
//
// Threads of a block run one at a time. Kernels without barriers or warp collectives call the
// entry once per thread in schedule order. Others run each thread as a fiber that switches at
// barriers; the switch is hand-written for x86-64 and aarch64 (ucontext elsewhere).

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <setjmp.h>
#include <ucontext.h>
#include <unistd.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#define MG_UCONTEXT 1
#endif

// ------------------------------------------------------------------ kernel-visible context
struct Dim3 { unsigned x, y, z; };
struct MgCtx { Dim3 thread_idx, block_idx, block_dim, grid_dim; };

typedef void (*EntryFn)(void** args);

// The kernel's objects: the checked build (instrumented when the race check is on) and, when the
// request names one, an unchecked build of the same text for the blocks the checks do not watch,
// which then runs at the speed of a plain build. Each has its own thread indices and shared memory;
// the kernel's __device__ data lives in both, identically laid out, and is copied across whenever
// the running block's object changes, so the blocks see one device memory (see use_object).
struct KernelObject {
    MgCtx* ctx;                                   // __mg_ctx inside it
    unsigned char *smem_static_begin, *smem_static_end, *smem_dynamic;
    size_t smem_dynamic_capacity;
    uintptr_t base;                               // its load address
};
enum { CHECKED = 0, UNCHECKED = 1 };
static KernelObject g_objects[2];
static int g_nobjects = 1;
static int g_running_object = CHECKED;
static unsigned long long (*g_shared_data)[2];    // (object offset, bytes) of the kernel's data
static unsigned g_nshared_data;

// The running block's object's: thread indices and shared memory.
static MgCtx* g_ctx;
static unsigned char* g_smem_static_begin;
static unsigned char* g_smem_static_end;
static unsigned char* g_smem_dynamic;
static size_t g_smem_dynamic_capacity;

// ------------------------------------------------------------------ raw output (async-signal-safe)
static void raw_write(const char* s, size_t n) {
    while (n > 0) {
        ssize_t w = write(1, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}
static size_t fmt_u64(char* out, unsigned long long v) {
    char tmp[24];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}
struct Line {
    char buf[1024];
    size_t n = 0;
    Line& s(const char* t) { while (*t && n < sizeof(buf) - 2) buf[n++] = *t++; return *this; }
    Line& u(unsigned long long v) { if (n < sizeof(buf) - 26) n += fmt_u64(buf + n, v); return *this; }
    Line& i(long long v) { if (v < 0) { s("-"); v = -v; } return u((unsigned long long)v); }
    Line& hex(unsigned long long v) {
        s("0x");
        char tmp[17]; int k = 0;
        do { tmp[k++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
        while (k) buf[n++] = tmp[--k];
        return *this;
    }
    void emit() { buf[n++] = '\n'; raw_write(buf, n); n = 0; }
};

__attribute__((noreturn)) static void sys_exit(int code) { syscall(SYS_exit, code); for (;;) {} }

// ------------------------------------------------------------------ request
struct Launch {
    EntryFn entry[2];            // in the checked and the unchecked object
    const char* symbol;          // the entry's name (inside the request), resolved once loaded
    Dim3 grid, block;
    size_t shared_bytes;
    int nargs;
    void* args[64];              // pointers handed to the entry shim
    unsigned long long slots[64];  // storage for pointer and value arguments
};
// Before a case's first launch, `bytes` bytes of an input (at `mem_offset` in the buffers) go to a
// __constant__ array of the kernel (at `object_offset` in each object).
struct ConstantCopy { unsigned long long object_offset, mem_offset, bytes; };
struct Case {
    int nlaunches;
    Launch* launches;
    int nconstants;
    ConstantCopy* constants;
    unsigned long long salt;    // drawn from the case's digest: what a GPU leaves to chance
};

static int g_ncases, g_first_case;
static Case* g_cases;
static int g_fiber_mode;
static int g_schedule;             // 0 ascending, 1 descending, 2 shuffled
static unsigned long long g_seed;
static size_t g_stack_bytes;
static unsigned g_max_threads;
static unsigned char* g_mem;       // the memfd mapping
static uintptr_t g_main_stack_top, g_main_stack_limit;  // plain mode runs threads on this stack
static size_t g_mem_bytes;

// where we are, for fault messages
static volatile int g_case = -1, g_launch = -1;
static volatile int g_in_kernel;

// ------------------------------------------------------------------ fibers
struct Fiber {
    void* sp;
    int state;
    unsigned linear;
    Dim3 tid;
    // collective bookkeeping
    int line, site;
    int op;
    unsigned mask;
    int kind, arg, width;
    unsigned long long value, result;
#ifdef MG_UCONTEXT
    ucontext_t uc;
    jmp_buf jb;
#endif
};
enum { F_RUNNABLE, F_WAIT_BLOCK, F_WAIT_WARP, F_DONE };

// Threads of the running block in each state, kept by set_state, so that the scheduler learns
// after a pass whether the block is done, blocked or deadlocked without visiting every thread.
static unsigned g_in_state[4];

static Fiber* g_fibers;

static inline void set_state(Fiber* f, int state) {
    g_in_state[f->state]--;
    g_in_state[state]++;
    f->state = state;
}
// Per warp of the running block, one bit a lane: waiting in a warp collective (not __activemask),
// and exited. They answer "has every lane of the mask arrived" without visiting 32 fibers.
static unsigned* g_warp_arrived;
static unsigned* g_warp_done;
static unsigned char* g_stacks;
static size_t g_stack_stride;
static unsigned* g_order;
static unsigned g_nthreads;
static Fiber* g_current;
#ifndef MG_UCONTEXT
static void* g_sched_sp;
#endif
static EntryFn g_entry;
static void** g_entry_args;
static Line g_sync_message;

#if defined(__x86_64__)
// void mg_switch(void** save_sp, void* new_sp): saves callee-saved registers on the current stack,
// stores the stack pointer, loads the other one and restores its registers.
asm(R"(
.text
.globl mg_switch
.type mg_switch,@function
mg_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size mg_switch,.-mg_switch
)");
#elif defined(__aarch64__)
asm(R"(
.text
.globl mg_switch
.type mg_switch,%function
mg_switch:
    sub sp, sp, #176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    add sp, sp, #176
    ret
.size mg_switch,.-mg_switch
)");
#endif
extern "C" void mg_switch(void** save_sp, void* new_sp);

__attribute__((noreturn)) static void sys_exit(int code);
__attribute__((noreturn)) static void die(const char* what);
#include "race.h"

static void set_thread_ctx(const Fiber* f) {
    g_ctx->thread_idx = f->tid;
    race_thread_switched(f->linear);
}

static void yield_thread();

// A fiber's body loops, so a fiber created once can serve every block: the hand-written switch
// simply rebuilds each fiber's first frame per block, while the ucontext fallback must create its
// fibers before the sandbox closes (swapcontext makes a system call) and then switches with
// _setjmp/_longjmp, which make none.
static void fiber_main() {
    for (;;) {
        Fiber* f = g_current;
        g_entry(g_entry_args);
        race_settle();
        set_state(f, F_DONE);
        g_warp_done[f->linear / 32] |= 1u << (f->linear % 32);
        yield_thread();
    }
}

#ifdef MG_UCONTEXT
static jmp_buf g_sched_jb;

static void fiber_park_then_run() {
    Fiber* f = g_current;
    if (!_setjmp(f->jb)) _longjmp(g_sched_jb, 1);  // parked until the first block resumes it
    fiber_main();
}

// Before seccomp: enter every fiber once so that each parks at its first yield.
static void create_fibers_before_sandbox() {
    ucontext_t here;
    for (unsigned t = 0; t < g_max_threads; t++) {
        Fiber* f = &g_fibers[t];
        getcontext(&f->uc);
        f->uc.uc_stack.ss_sp = g_stacks + (size_t)t * g_stack_stride + 4096;
        f->uc.uc_stack.ss_size = g_stack_bytes;
        f->uc.uc_link = nullptr;
        makecontext(&f->uc, fiber_park_then_run, 0);
        g_current = f;
        if (!_setjmp(g_sched_jb)) swapcontext(&here, &f->uc);
    }
}
#endif

static const unsigned STACK_COLOURS = 64;  // 64 cache lines: one 4 KiB page of slack per stack

static void fiber_init(Fiber* f, unsigned index) {
#ifdef MG_UCONTEXT
    (void)f; (void)index;  // created once, parked in fiber_main's loop
#else
    unsigned char* stack_lo = g_stacks + (size_t)index * g_stack_stride + 4096;  // above the guard
    // Stacks are a whole number of pages apart, so their tops would all fall in one set of the L1
    // cache and evict each other at every switch; each top is moved up by its own number of cache
    // lines (into the slack page allocate_fibers leaves), keeping g_stack_bytes usable below it.
    unsigned char* top = stack_lo + g_stack_bytes + (index % STACK_COLOURS) * 64;
#if defined(__x86_64__)
    // After the six pops and `ret`, rsp must be 8 mod 16, as at any function entry.
    uintptr_t t = ((uintptr_t)top & ~(uintptr_t)15);
    void** sp = (void**)t;
    *--sp = nullptr;                 // fake return address of fiber_main
    *--sp = (void*)fiber_main;       // where `ret` goes
    for (int k = 0; k < 6; k++) *--sp = nullptr;
    f->sp = sp;
#elif defined(__aarch64__)
    uintptr_t t = ((uintptr_t)top & ~(uintptr_t)15) - 176;
    memset((void*)t, 0, 176);
    ((void**)t)[11] = (void*)fiber_main;  // x30 slot: where `ret` goes
    f->sp = (void*)t;
#endif
#endif
}

// A pass of the scheduler visits g_order once and runs every runnable thread in turn; g_cursor is
// the position of the running one. A thread that stops hands over directly to the next runnable
// thread of the pass, and only the last one returns to the scheduler. Threads at one barrier stop
// on the same chain of calls, so the direct hand-off returns along addresses the CPU's return
// predictor already holds; going through the scheduler cost two mispredicted returns per switch.
static unsigned g_cursor;

static void resume(Fiber* f) {
    g_current = f;
    set_thread_ctx(f);
#ifdef MG_UCONTEXT
    if (!_setjmp(g_sched_jb)) _longjmp(f->jb, 1);
#else
    mg_switch(&g_sched_sp, f->sp);
#endif
}

static void switch_fiber(Fiber* from, Fiber* to) {
    g_current = to;
    set_thread_ctx(to);
#ifdef MG_UCONTEXT
    if (!_setjmp(from->jb)) _longjmp(to->jb, 1);
#else
    mg_switch(&from->sp, to->sp);
#endif
}

static void try_complete_activemask(unsigned warp);
static int g_sync_error;

// A block's threads touch more stack and bookkeeping than the L1 cache holds, so each switch
// would stall on the next thread's saved registers. While position k of the pass runs, the saved
// frames of k + 1 (whose Fiber was fetched one switch earlier) and the Fiber of k + 2 are fetched.
static inline void prefetch_after(unsigned k) {
    if (k + 2 < g_nthreads) __builtin_prefetch(&g_fibers[g_order[k + 2]]);
    if (k + 1 < g_nthreads) {
        const char* sp = (const char*)g_fibers[g_order[k + 1]].sp;
        __builtin_prefetch(sp);
        __builtin_prefetch(sp + 64);
        __builtin_prefetch(sp + 128);
    }
}

// The running thread has stopped (barrier, warp collective, exit or sync error): run the next
// runnable thread of this pass, or return to the scheduler when none is left.
static void yield_thread() {
    Fiber* f = g_current;
    try_complete_activemask(f->linear / 32);
    if (!g_sync_error) {
        for (unsigned k = g_cursor + 1; k < g_nthreads; k++) {
            Fiber* next = &g_fibers[g_order[k]];
            if (next->state == F_RUNNABLE) {
                g_cursor = k;
                prefetch_after(k);
                switch_fiber(f, next);
                return;
            }
        }
    }
#ifdef MG_UCONTEXT
    if (!_setjmp(f->jb)) _longjmp(g_sched_jb, 1);
#else
    mg_switch(&f->sp, g_sched_sp);
#endif
}

// ------------------------------------------------------------------ schedules
static unsigned long long splitmix(unsigned long long* s) {
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Fills order[0..n) with the visiting order of n items; `salt` separates blocks from threads.
static void make_order(unsigned* order, unsigned n, unsigned long long salt) {
    for (unsigned i = 0; i < n; i++) order[i] = g_schedule == 1 ? n - 1 - i : i;
    if (g_schedule == 2) {
        unsigned long long s = g_seed * 0x100000001b3ULL ^ salt;
        for (unsigned i = n; i > 1; i--) {
            unsigned j = (unsigned)(splitmix(&s) % i);
            unsigned t = order[i - 1]; order[i - 1] = order[j]; order[j] = t;
        }
    }
}

// Block visiting order for grids too large to shuffle in memory: an affine bijection of [0, n).
static unsigned long long g_block_a, g_block_b;
static unsigned long long gcd_u64(unsigned long long a, unsigned long long b) {
    while (b) { unsigned long long t = a % b; a = b; b = t; }
    return a;
}
static void prepare_block_order(unsigned long long n, unsigned long long salt) {
    unsigned long long s = g_seed ^ salt;
    g_block_a = 1; g_block_b = 0;
    if (g_schedule == 2 && n > 1) {
        g_block_a = 1 + splitmix(&s) % (n - 1);                            // in [1, n - 1]
        while (gcd_u64(g_block_a, n) != 1) g_block_a = g_block_a % (n - 1) + 1;  // reaches 1 at worst
        g_block_b = splitmix(&s) % n;
    }
}
static unsigned long long block_at(unsigned long long i, unsigned long long n) {
    if (g_schedule == 1) return n - 1 - i;
    if (g_schedule == 2) return (unsigned long long)(((__uint128_t)g_block_a * i + g_block_b) % n);
    return i;
}

// ------------------------------------------------------------------ sync errors
static const int KIND_ACTIVEMASK = 16;  // after the header's __MG_* collective kinds

static const char* kind_name(int kind) {
    if (kind == KIND_ACTIVEMASK) return "__activemask";
    static const char* names[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                  "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync",
                                  "__match_any_sync", "__match_all_sync", "__reduce_add_sync",
                                  "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                                  "__reduce_or_sync", "__reduce_xor_sync"};
    return kind >= 0 && kind < 16 ? names[kind] : "warp collective";
}

static Line& describe_thread(Line& l, const Fiber* f) {
    return l.s("thread (").u(f->tid.x).s(",").u(f->tid.y).s(",").u(f->tid.z).s(")");
}

static void fail_sync(const Line& why) {
    if (g_sync_error) return;
    g_sync_error = 1;
    g_sync_message = why;
}
static void fail_sync(const char* why) {
    Line l;
    l.s(why);
    fail_sync(l);
}

// ------------------------------------------------------------------ barriers (called by kernels)
// The barrier being filled: the site of its first arrival, whether a thread arrived at another
// site (divergent __syncthreads), and how many arrivals had a true predicate.
static int g_barrier_site, g_barrier_mixed;
static unsigned long long g_barrier_true;

static void arrive_at_barrier(Fiber* f, int line, int site, int op, int pred) {
    if (g_in_state[F_WAIT_BLOCK] == 0) {
        g_barrier_site = site;
        g_barrier_mixed = 0;
        g_barrier_true = 0;
    } else if (site != g_barrier_site) {
        g_barrier_mixed = 1;
    }
    g_barrier_true += pred != 0;
    f->line = line;
    f->site = site;
    f->op = op >= 1 && op <= 3 ? op : 0;   // count, and, or; anything else reads 0
    set_state(f, F_WAIT_BLOCK);
    yield_thread();
}

extern "C" __attribute__((visibility("default"))) void __mg_syncthreads(int line, int site) {
    race_settle();
    if (!g_fiber_mode) {
        fail_sync("a barrier was reached in a kernel run without fibers");
        return;
    }
    arrive_at_barrier(g_current, line, site, 0, 0);
}

extern "C" __attribute__((visibility("default"))) int __mg_syncthreads_op(int line, int site, int op,
                                                                           int pred) {
    race_settle();
    if (!g_fiber_mode) {
        fail_sync("a barrier was reached in a kernel run without fibers");
        return 0;
    }
    Fiber* f = g_current;
    arrive_at_barrier(f, line, site, op, pred);
    return (int)f->result;
}

// __activemask() answers "which lanes of my warp execute this together": threads here run one at
// a time, so the caller waits until no lane of its warp is still runnable; the lanes waiting in
// __activemask then are the active set, and lanes that exited or wait elsewhere are not.

static unsigned g_activemask_waiters;  // fibers inside __activemask: the scheduler checks only then

static void try_complete_activemask(unsigned warp) {
    if (!g_activemask_waiters) return;
    unsigned waiting = 0;
    for (unsigned l = 0; l < 32; l++) {
        unsigned t = warp * 32 + l;
        if (t >= g_nthreads) break;
        const Fiber* f = &g_fibers[t];
        if (f->state == F_RUNNABLE) return;
        if (f->state == F_WAIT_WARP && f->kind == KIND_ACTIVEMASK) waiting |= 1u << l;
    }
    for (unsigned l = 0; l < 32; l++) {
        if (!(waiting >> l & 1)) continue;
        Fiber* f = &g_fibers[warp * 32 + l];
        f->result = waiting;
        set_state(f, F_RUNNABLE);
        g_activemask_waiters--;
    }
}

extern "C" __attribute__((visibility("default"))) unsigned __mg_activemask(void) {
    race_settle();
    if (!g_fiber_mode) return 1u << (g_ctx->thread_idx.x % 32);
    Fiber* f = g_current;
    set_state(f, F_WAIT_WARP);
    f->kind = KIND_ACTIVEMASK;
    g_activemask_waiters++;
    yield_thread();
    return (unsigned)f->result;
}

// Undefined shuffle sources (a lane that does not exist or is not in the mask) read all-ones
// bits: NaN for floating point, -1 for integers, so the fault shows instead of hiding.
static const unsigned long long POISON_BITS = ~0ULL;

static void complete_warp(unsigned warp, unsigned group) {
    Fiber* lanes = g_fibers + warp * 32;
    unsigned lanes_here = g_nthreads - warp * 32;
    race_warp_completes(warp, group, (lanes_here >= 32 ? ~0u : (1u << lanes_here) - 1) & ~g_warp_done[warp]);
    unsigned votes = 0;                 // ballot of the group, computed once
    int have_votes = 0;
    int reduced_kind = -1, reduced_arg = 0;  // the last __reduce_*_sync result, reused by its peers
    unsigned long long reduced = 0;
    unsigned same_as[32];               // __match_any_sync: the lanes of the group holding each lane's
    int have_matches = 0;               // value, found once per distinct value
    for (unsigned l = 0; l < 32; l++) {
        if (!(group >> l & 1)) continue;
        Fiber* f = &lanes[l];
        unsigned long long r = 0;
        int w = f->width;
        unsigned base = l & ~(unsigned)(w - 1);
        long src = -1;
        switch (f->kind) {
            case 1: src = base + ((unsigned)f->arg & (w - 1)); break;
            case 2: src = (long)l - f->arg; if (src < (long)base) src = l; break;
            case 3: src = (long)l + f->arg; if (src >= (long)(base + w)) src = l; break;
            case 4: src = (long)(l ^ (unsigned)f->arg); if (src >= (long)(base + w)) src = l; break;
            default: break;
        }
        if (f->kind >= 1 && f->kind <= 4) {
            r = (src >= 0 && src < 32 && (group >> src & 1)) ? lanes[src].value : POISON_BITS;
            if (src == (long)l) r = f->value;
        } else if (f->kind == 5 || f->kind == 6 || f->kind == 7) {
            if (!have_votes) {
                for (unsigned k = 0; k < 32; k++)
                    if ((group >> k & 1) && lanes[k].value) votes |= 1u << k;
                have_votes = 1;
            }
            r = f->kind == 5 ? votes : f->kind == 6 ? votes != 0 : votes == group;
        } else if (f->kind == 8 || f->kind == 9) {
            if (!have_matches) {
                unsigned left = group;
                while (left) {
                    const unsigned long long v = lanes[__builtin_ctz(left)].value;
                    unsigned same = 0;
                    for (unsigned rest = left; rest; rest &= rest - 1)
                        if (lanes[__builtin_ctz(rest)].value == v) same |= 1u << __builtin_ctz(rest);
                    for (unsigned m = same; m; m &= m - 1) same_as[__builtin_ctz(m)] = same;
                    left &= ~same;
                }
                have_matches = 1;
            }
            r = f->kind == 8 ? same_as[l] : (same_as[l] == group ? group : 0);
        } else if (f->kind >= 10 && f->kind == reduced_kind && f->arg == reduced_arg) {
            r = reduced;
        } else if (f->kind >= 10) {
            int is_signed = f->arg;
            long long acc = 0;
            int first = 1;
            for (unsigned k = 0; k < 32; k++) {
                if (!(group >> k & 1)) continue;
                unsigned long long raw = lanes[k].value & 0xffffffffULL;
                long long v = is_signed ? (long long)(int)(unsigned)raw : (long long)raw;
                if (first) { acc = v; first = 0; continue; }
                switch (f->kind) {
                    case 10: acc += v; break;
                    case 11: acc = v < acc ? v : acc; break;
                    case 12: acc = v > acc ? v : acc; break;
                    case 13: acc &= v; break;
                    case 14: acc |= v; break;
                    case 15: acc ^= v; break;
                }
            }
            r = (unsigned long long)(unsigned)acc;
            reduced_kind = f->kind;
            reduced_arg = f->arg;
            reduced = r;
        }
        f->result = r;
    }
    for (unsigned l = 0; l < 32; l++)
        if (group >> l & 1) set_state(&lanes[l], F_RUNNABLE);
    g_warp_arrived[warp] &= ~group;
}

extern "C" __attribute__((visibility("default"))) unsigned long long __mg_warp_op(
    int line, unsigned mask, int kind, unsigned long long value, int arg, int width) {
    (void)line;
    race_settle();
    if (!g_fiber_mode) {
        fail_sync("a warp collective was reached in a kernel run without fibers");
        return value;
    }
    Fiber* f = g_current;
    unsigned lane = f->linear % 32, warp = f->linear / 32;
    unsigned lanes_here = g_nthreads - warp * 32;   // lanes of this warp that exist
    unsigned exist = lanes_here >= 32 ? ~0u : (1u << lanes_here) - 1;
    if (width < 1 || width > 32 || (width & (width - 1))) {
        Line m; m.s(kind_name(kind)).s(" with width ").i(width).s(" (must be a power of two <= 32) in ");
        describe_thread(m, f);
        fail_sync(m);
        set_state(f, F_WAIT_WARP);
        yield_thread();
        return value;
    }
    if (!(mask >> lane & 1)) {
        Line m; m.s(kind_name(kind)).s(" called by lane ").u(lane).s(" whose bit is not in mask ").hex(mask).s(" (");
        describe_thread(m, f).s(")");
        fail_sync(m);
        set_state(f, F_WAIT_WARP);
        yield_thread();
        return value;
    }
    set_state(f, F_WAIT_WARP);
    f->mask = mask & exist;
    f->kind = kind;
    f->value = value;
    f->arg = arg;
    f->width = width;
    g_warp_arrived[warp] |= 1u << lane;
    // The lowest lane of the mask that has not arrived decides: an exited one is an error.
    unsigned missing = f->mask & ~g_warp_arrived[warp];
    int ready = missing == 0;
    if (!ready) {
        unsigned l = (unsigned)__builtin_ctz(missing);
        if (g_warp_done[warp] >> l & 1) {
            Line m; m.s(kind_name(kind)).s(" waits for lane ").u(l).s(" of warp ").u(warp)
                .s(" in mask ").hex(mask).s(", which has already exited");
            fail_sync(m);
        }
    }
    if (ready) {
        complete_warp(warp, f->mask);
        return f->result;
    }
    yield_thread();
    return f->result;
}

// ------------------------------------------------------------------ printf
static char* g_print_buf;
static size_t g_print_cap, g_print_len;

// CUDA's printf returns the number of arguments its format parsed (0 with none, -1 for a NULL
// format), not C's count of characters: a kernel may branch on it, so it gets the GPU's value.
static int printf_arguments(const char* fmt) {
    int n = 0;
    for (const char* p = fmt; *p; p++) {
        if (*p != '%') continue;
        if (*++p == '%') continue;
        for (; *p && !strchr("diouxXeEfFgGaAcspn", *p); p++)
            if (*p == '*') n++;              // a width or precision taken from the arguments
        if (!*p) break;
        n++;
    }
    return n;
}

extern "C" __attribute__((visibility("default"))) int __mg_printf(const char* fmt, ...) {
    if (!fmt) return -1;
    if (g_print_buf && g_print_len < g_print_cap) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(g_print_buf + g_print_len, g_print_cap - g_print_len, fmt, ap);
        va_end(ap);
        if (n > 0) g_print_len += (size_t)n < g_print_cap - g_print_len ? (size_t)n : g_print_cap - g_print_len - 1;
    }
    return printf_arguments(fmt);
}

static void flush_printf(int case_index) {
    if (!g_print_len) return;
    Line l;
    l.s("printf ").u(case_index).s(" ").u(g_print_len);
    l.emit();
    raw_write(g_print_buf, g_print_len);
    raw_write("\n", 1);
    g_print_len = 0;
}

// ------------------------------------------------------------------ running blocks
// What a kernel can read that a GPU leaves to chance is drawn per case from the case's salt, so no
// fixed value tells the emulator from a GPU: the clock's start and step, and shared memory's
// content at block start (all-ones bytes: NaN and -1; a large finite pattern of either sign; or
// random bits, drawn anew per block).
static unsigned long long g_clock, g_clock_step, g_salt;
static int g_shared_poison;   // 0 all-ones, 1 large positive, 2 large negative, 3 random bits

extern "C" __attribute__((visibility("default"))) unsigned long long __mg_clock(void) {
    return g_clock += g_clock_step;
}

static void case_draws(unsigned long long salt) {
    g_salt = salt;
    g_clock = (1ULL << 20) + (salt & ((1ULL << 40) - 1));
    g_clock_step = 4 + ((salt >> 40) & 63);
    g_shared_poison = (int)((salt >> 56) & 3);
}

static void fill_poison(unsigned char* p, size_t n, unsigned long long block) {
    unsigned long long word = 0xffffffffffffffffULL, x = g_salt ^ (0x9e3779b97f4a7c15ULL * (block + 1));
    if (g_shared_poison == 1) word = 0x7effff7f7effff7fULL;        // float 1.7e38 (and half -> big)
    if (g_shared_poison == 2) word = 0xfeffff7ffeffff7fULL;        // float -1.7e38
    for (size_t i = 0; i + 8 <= n; i += 8) {
        if (g_shared_poison == 3) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            word = x;
        }
        memcpy(p + i, &word, 8);
    }
    for (size_t i = n & ~(size_t)7; i < n; i++) p[i] = (unsigned char)(word >> (8 * (i & 7)));
}

static void poison_shared(size_t dynamic_bytes, unsigned long long block) {
    if (g_smem_static_begin && g_smem_static_end > g_smem_static_begin)
        fill_poison(g_smem_static_begin, (size_t)(g_smem_static_end - g_smem_static_begin), block);
    if (g_smem_dynamic && dynamic_bytes)
        fill_poison(g_smem_dynamic, dynamic_bytes < g_smem_dynamic_capacity ? dynamic_bytes : g_smem_dynamic_capacity,
                    block);
}

static void thread_coords(unsigned linear, const Dim3& b, Dim3* out) {
    out->x = linear % b.x;
    out->y = (linear / b.x) % b.y;
    out->z = linear / (b.x * b.y);
}

// Runs one block as fibers; returns 0, or 1 after a sync error (message in g_sync_message).
static int run_block_fibers(unsigned long long block_linear, const Dim3& b) {
    g_activemask_waiters = 0;
    memset(g_warp_arrived, 0, sizeof(unsigned) * ((g_nthreads + 31) / 32));
    memset(g_warp_done, 0, sizeof(unsigned) * ((g_nthreads + 31) / 32));
    for (unsigned t = 0; t < g_nthreads; t++) {
        Fiber* f = &g_fibers[t];
        f->state = F_RUNNABLE;
        f->linear = t;
        thread_coords(t, b, &f->tid);
        fiber_init(f, t);
    }
    g_in_state[F_RUNNABLE] = g_nthreads;
    g_in_state[F_WAIT_BLOCK] = g_in_state[F_WAIT_WARP] = g_in_state[F_DONE] = 0;
    make_order(g_order, g_nthreads, 0x5eed0000ULL + block_linear);
    for (;;) {
        for (unsigned k = 0; k < g_nthreads; k++) {   // a pass: threads hand over to each other
            if (g_fibers[g_order[k]].state == F_RUNNABLE) {
                g_cursor = k;
                resume(&g_fibers[g_order[k]]);
                break;
            }
        }
        if (g_sync_error) return 1;
        if (g_in_state[F_DONE] == g_nthreads) return 0;
        if (g_in_state[F_RUNNABLE]) continue;
        unsigned at_block = g_in_state[F_WAIT_BLOCK], at_warp = g_in_state[F_WAIT_WARP];
        if (at_block && !at_warp && !g_barrier_mixed) {
            // Every thread still running waits at the same __syncthreads: release the block.
            // Threads that already returned count as arrived, as they do on current GPUs.
            const unsigned long long result[4] = {0, g_barrier_true, g_barrier_true == at_block,
                                                  g_barrier_true != 0};
            for (unsigned t = 0; t < g_nthreads; t++) {
                Fiber* f = &g_fibers[t];
                if (f->state != F_WAIT_BLOCK) continue;
                f->result = result[f->op];
                f->state = F_RUNNABLE;
            }
            g_in_state[F_RUNNABLE] += at_block;
            g_in_state[F_WAIT_BLOCK] = 0;
            race_barrier_completes();
            continue;
        }
        Line m;
        if (g_barrier_mixed && at_block) {
            Fiber* first_block = nullptr;
            Fiber* other_line = nullptr;
            for (unsigned t = 0; t < g_nthreads && !other_line; t++) {
                Fiber* f = &g_fibers[t];
                if (f->state != F_WAIT_BLOCK) continue;
                if (!first_block) first_block = f;
                else if (f->site != first_block->site) other_line = f;
            }
            m.s("divergent __syncthreads: ");
            describe_thread(m, first_block).s(" waits at line ").i(first_block->line).s(", ");
            describe_thread(m, other_line).s(" at line ").i(other_line->line);
        } else {
            m.s("deadlock: ").u(at_block).s(" threads wait at __syncthreads, ").u(at_warp)
                .s(" at warp collectives, ").u(g_in_state[F_DONE]).s(" have exited");
            for (unsigned t = 0; t < g_nthreads; t++) {
                Fiber* f = &g_fibers[t];
                if (f->state == F_WAIT_WARP) {
                    m.s("; e.g. ");
                    describe_thread(m, f).s(" waits in ").s(kind_name(f->kind)).s(" with mask ").hex(f->mask);
                    break;
                }
            }
        }
        fail_sync(m);
        return 1;
    }
}

static void run_block_plain(const Dim3& b, unsigned nthreads, EntryFn entry, void** args,
                            unsigned long long block_linear) {
    make_order(g_order, nthreads, 0x5eed0000ULL + block_linear);
    for (unsigned k = 0; k < nthreads; k++) {
        Dim3 tid;
        thread_coords(g_order[k], b, &tid);
        g_ctx->thread_idx = tid;
        race_thread_switched(g_order[k]);
        entry(args);
        race_settle();
        if (g_sync_error) return;
    }
}

// Makes object `o` the running block's, first copying the kernel's data into it from the object that
// ran the last block. Once blocks on the unchecked object are seen to change that data, every later
// block runs on the checked object: the state check needs to know which words a launch wrote.
static void use_object(int o) {
    if (o == g_running_object) return;
    const KernelObject& from = g_objects[g_running_object];
    const KernelObject& to = g_objects[o];
    int changed = 0;
    for (unsigned i = 0; i < g_nshared_data; i++) {
        const unsigned char* src = (const unsigned char*)from.base + g_shared_data[i][0];
        unsigned char* dst = (unsigned char*)to.base + g_shared_data[i][0];
        if (o == CHECKED && !changed) changed = memcmp(dst, src, g_shared_data[i][1]) != 0;
        memcpy(dst, src, g_shared_data[i][1]);
    }
    if (changed) {
        race_data_rewritten();
        g_nobjects = 1;
    }
    to.ctx->block_dim = g_ctx->block_dim;
    to.ctx->grid_dim = g_ctx->grid_dim;
    g_ctx = to.ctx;
    g_smem_static_begin = to.smem_static_begin;
    g_smem_static_end = to.smem_static_end;
    g_smem_dynamic = to.smem_dynamic;
    g_smem_dynamic_capacity = to.smem_dynamic_capacity;
    g_running_object = o;
}

static int run_launch(int li, Launch* L) {
    g_launch = li;
    g_ctx->block_dim = L->block;
    g_ctx->grid_dim = L->grid;
    g_nthreads = L->block.x * L->block.y * L->block.z;
    g_entry_args = L->args;
    unsigned long long nblocks = (unsigned long long)L->grid.x * L->grid.y * L->grid.z;
    prepare_block_order(nblocks, 0xb10c0000ULL + (unsigned)li);
    race_launch_begins();
    for (unsigned long long i = 0; i < nblocks; i++) {
        unsigned long long bl = block_at(i, nblocks);
        Dim3 bid;
        bid.x = (unsigned)(bl % L->grid.x);
        bid.y = (unsigned)((bl / L->grid.x) % L->grid.y);
        bid.z = (unsigned)(bl / ((unsigned long long)L->grid.x * L->grid.y));
        use_object(g_nobjects > 1 && !race_watches(bid) ? UNCHECKED : CHECKED);
        g_entry = L->entry[g_running_object];
        g_ctx->block_idx = bid;
        poison_shared(L->shared_bytes, bl);
        race_block_begins(bl);
        int failed;
        if (g_fiber_mode) {
            failed = run_block_fibers(bl, L->block);
        } else {
            run_block_plain(L->block, g_nthreads, g_entry, L->args, bl);
            failed = g_sync_error;
        }
        race_block_ends();
        if (failed) {
            flush_printf(g_case);   // what the kernel printed comes before its case's result
            Line l;
            l.s("result ").u(g_case).s(" sync_error launch ").i(li).s(" block (").u(bid.x).s(",")
                .u(bid.y).s(",").u(bid.z).s("): ");
            g_sync_message.buf[g_sync_message.n] = 0;
            l.s(g_sync_message.buf);
            l.emit();
            return 1;
        }
    }
    use_object(CHECKED);   // the state check's launch boundary: the data is the checked object's again
    return 0;
}

// ------------------------------------------------------------------ faults
static void on_fault(int sig, siginfo_t* info, void* uctx) {
    if (g_in_kernel) flush_printf(g_case);   // what the kernel printed first: a failed assert's message
    Line l;
    const char* outcome = "crash";
    if (sig == SIGXCPU) outcome = "timeout";
    else if (sig == SIGSEGV || sig == SIGBUS) outcome = "memory_fault";
    l.s("result ").i(g_case).s(" ").s(outcome).s(" ");
    if (sig == SIGXCPU) {
        l.s("cpu time limit exceeded");
    } else {
        uintptr_t addr = (uintptr_t)info->si_addr;
        int is_write = -1;
#if defined(__x86_64__)
        if (sig == SIGSEGV) is_write = (((ucontext_t*)uctx)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
        (void)uctx;
#endif
        l.s("signal ").i(sig).s(" access ").s(is_write == 1 ? "write" : is_write == 0 ? "read" : "unknown");
        if (sig == SIGSEGV || sig == SIGBUS) {
            if (addr >= (uintptr_t)g_mem && addr < (uintptr_t)g_mem + g_mem_bytes)
                l.s(" offset ").u(addr - (uintptr_t)g_mem);
            else if (g_stacks && addr >= (uintptr_t)g_stacks && addr < (uintptr_t)g_stacks + g_stack_stride * g_max_threads)
                l.s(" stack ").u((addr - (uintptr_t)g_stacks) % g_stack_stride);
            else if (addr < g_main_stack_top && addr + g_main_stack_limit + (1 << 20) > g_main_stack_top)
                l.s(" stack 0");  // the guard below the main stack: plain-mode recursion overflowed
            else if (addr >= 65536 && g_mem)  // relative to the buffers: the same in every run (no ASLR)
                l.s(" outside ").i((long long)(addr - (uintptr_t)g_mem));
            else
                l.s(" address ").hex(addr);
        }
        if (sig == SIGSEGV && info->si_code == SEGV_ACCERR) l.s(" protected");
        if (sig == SIGBUS && info->si_code == BUS_ADRALN) l.s(" misaligned");
    }
    if (g_in_kernel) {
        l.s(" where launch ").i(g_launch).s(" block (").u(g_ctx->block_idx.x).s(",").u(g_ctx->block_idx.y)
            .s(",").u(g_ctx->block_idx.z).s(") thread (").u(g_ctx->thread_idx.x).s(",")
            .u(g_ctx->thread_idx.y).s(",").u(g_ctx->thread_idx.z).s(")");
    }
    l.emit();
    sys_exit(3);
}

static void install_handlers(void* altstack, size_t altsize) {
    stack_t ss;
    ss.ss_sp = altstack;
    ss.ss_size = altsize;
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGXCPU, SIGABRT, SIGTRAP, SIGSYS};
    for (int s : sigs) sigaction(s, &sa, nullptr);
}

// ------------------------------------------------------------------ request parsing
static char* g_req;
static char* g_tok;

// Set-up errors end with a raw exit: exit() would run atexit handlers and the kernel object's
// .fini_array, i.e. code of the submission outside the final filter.
__attribute__((noreturn)) static void die(const char* what) {
    Line l;
    l.s("fatal ").s(what);
    l.emit();
    sys_exit(2);
}
static char* next_token() {
    while (*g_tok == ' ' || *g_tok == '\n' || *g_tok == '\t') g_tok++;
    if (!*g_tok) die("request ended early");
    char* start = g_tok;
    while (*g_tok && *g_tok != ' ' && *g_tok != '\n' && *g_tok != '\t') g_tok++;
    if (*g_tok) *g_tok++ = 0;
    return start;
}
static void expect(const char* word) {
    char* t = next_token();
    if (strcmp(t, word)) {
        Line l; l.s("fatal expected '").s(word).s("' got '").s(t).s("'"); l.emit(); sys_exit(2);
    }
}
static unsigned long long next_u64() { return strtoull(next_token(), nullptr, 0); }

static char* read_all_stdin() {
    size_t cap = 1 << 16, n = 0;
    char* buf = (char*)malloc(cap);
    for (;;) {
        if (n + 1 >= cap) buf = (char*)realloc(buf, cap *= 2);
        ssize_t r = read(0, buf + n, cap - n - 1);
        if (r < 0) { if (errno == EINTR) continue; die("reading the request failed"); }
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = 0;
    return buf;
}

// Fiber stacks (each above a guard page), fibers and their per-warp bookkeeping, for up to
// g_max_threads threads of g_stack_bytes stack each; before the sandbox closes.
static void allocate_fibers() {
    g_stack_stride = 4096 + ((g_stack_bytes + 4095) & ~(size_t)4095) + 4096;  // guard, stack, colour slack
    g_stacks = (unsigned char*)mmap(nullptr, g_stack_stride * g_max_threads, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (g_stacks == MAP_FAILED) die("allocating fiber stacks failed");
    for (unsigned t = 0; t < g_max_threads; t++) mprotect(g_stacks + (size_t)t * g_stack_stride, 4096, PROT_NONE);
    g_fibers = (Fiber*)calloc(g_max_threads, sizeof(Fiber));
    g_warp_arrived = (unsigned*)calloc((g_max_threads + 31) / 32, sizeof(unsigned));
    g_warp_done = (unsigned*)calloc((g_max_threads + 31) / 32, sizeof(unsigned));
#ifdef MG_UCONTEXT
    create_fibers_before_sandbox();
#endif
}

// ------------------------------------------------------------------ the jail
// Closed before the kernel's object is loaded, because code in it can run inside dlopen (an ifunc
// resolver, an initialiser the object check missed). Each step is a few system calls per child.

// Copies everything readable from descriptor `src` to `dst`; returns 0, or -1 when a read or a
// write failed.
static int copy_bytes(int src, int dst) {
    static char buf[1 << 16];
    for (;;) {
        ssize_t r = read(src, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return 0;
        for (ssize_t done = 0; done < r;) {
            ssize_t w = write(dst, buf + done, (size_t)(r - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
            done += w;
        }
    }
}

// Where the root is the host's: the object (descriptor `src`, opened by the parent) copied into a
// sealed memfd, loaded through its /proc/self/fd link. The identity the runner drops to could not
// open the cached file again through that link (the cache is root's, its objects mode 0600 or
// 0711), but a memfd's inode is readable by everyone; the copy also pins the bytes that were
// checked. Writes the link into `path`; returns the memfd.
static int copy_object(int src, char* path, size_t path_size) {
    const unsigned MFD_NOEXEC_SEAL_ = 0x0008U;  // not in every header; refused before Linux 6.3
    int dst = (int)syscall(SYS_memfd_create, "kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL_);
    if (dst < 0 && errno == EINVAL) dst = (int)syscall(SYS_memfd_create, "kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (dst < 0) die("creating the object's memfd failed");
    if (copy_bytes(src, dst)) die("copying the kernel object failed");
    fcntl(dst, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    snprintf(path, path_size, "/proc/self/fd/%d", dst);
    return dst;
}

// ------------------------------------------------------------------ an empty root
// No file of the host (the system's, the judge's, the product's own) is readable if none is there:
// in a mount namespace of its own the runner replaces its root with an empty tmpfs that will hold
// the kernel's objects and nothing else, and makes it read-only once they are in. Started as root
// it needs only the mount namespace (the identity drop follows); started as anyone else it enters a
// user namespace of its own first, its uid and gid mapped to themselves, and gives up every
// capability there once the mounts are done. Every library a kernel's object may name (the math
// library, the object wall's only DT_NEEDED) is loaded before (load_libraries), so loading an object
// opens nothing but the object. It costs about 0.3 ms a runner (benchmarks/README.md).

// The mount point of the tmpfs before it becomes the root: a directory every Linux has, hidden only
// in this namespace.
static const char EMPTY_ROOT_MOUNT[] = "/proc";
// The objects' names inside it: the checked build and the unchecked one.
static const char* const OBJECT_FILES[2] = {"/checked.so", "/unchecked.so"};
static int g_in_user_namespace;

// ld.so matches an object's DT_NEEDED against the libraries already loaded by soname, before it
// searches any file.
static void load_libraries() {
    if (!dlopen(LIBM_SO, RTLD_NOW | RTLD_GLOBAL)) die("loading the math library failed");
}

static int write_small_file(const char* path, const char* text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = (ssize_t)strlen(text);
    int ok = write(fd, text, (size_t)n) == n;
    close(fd);
    return ok ? 0 : -1;
}

// Returns 1 once the root is an empty tmpfs, 0 where the namespaces or the mounts are refused (the
// root is then the host's, unchanged).
static int enter_empty_root() {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (uid == 0 ? unshare(CLONE_NEWNS) : unshare(CLONE_NEWUSER | CLONE_NEWNS)) return 0;
    if (uid != 0) {
        g_in_user_namespace = 1;
        char map[64];
        if (write_small_file("/proc/self/setgroups", "deny")) return 0;
        snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
        if (write_small_file("/proc/self/uid_map", map)) return 0;
        snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
        if (write_small_file("/proc/self/gid_map", map)) return 0;
    }
    // Mounts made here must not propagate back to the host's namespace.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) return 0;
    // Room for the two objects at the object wall's size cap (elf_check.MAX_FILE_BYTES, 16 MiB each).
    if (mount("mutagym", EMPTY_ROOT_MOUNT, "tmpfs", MS_NOSUID | MS_NODEV, "size=40m,nr_inodes=8,mode=0755"))
        return 0;
    // pivot_root(".", ".") stacks the old root on the new one; detaching it leaves the tmpfs alone.
    if (chdir(EMPTY_ROOT_MOUNT) || syscall(SYS_pivot_root, ".", ".")) {
        // e.g. a root that is itself a rootfs: back to the host's /proc, which loading then needs
        if (chdir("/") || umount2(EMPTY_ROOT_MOUNT, MNT_DETACH)) die("taking the empty root's tmpfs down failed");
        return 0;
    }
    if (umount2(".", MNT_DETACH) || chdir("/")) die("detaching the host's root failed");
    return 1;
}

// The object (descriptor `src`) as a file of the empty root, named `name`.
static void place_object(int src, const char* name) {
    int dst = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (dst < 0 || copy_bytes(src, dst)) die("writing the kernel object into the empty root failed");
    close(dst);
}

// Once the objects are in: the root read-only.
static void seal_empty_root() {
    if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr))
        die("making the empty root read-only failed");
}

// A process that made a user namespace holds every capability in it: none is left once the mounts
// are done, also where the empty root failed half-way.
static void drop_namespace_capabilities() {
    if (!g_in_user_namespace) return;
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &header, none)) die("dropping the user namespace's capabilities failed");
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
        die("clearing the ambient capabilities failed");
}

// setrlimit is not allowed inside the filters, so every limit is set here. The address space
// (RLIMIT_AS, and RLIMIT_DATA for brk and private mappings) is the parent's budget: the buffers,
// the fiber stacks and a headroom for the runner, its libraries and the kernel's object; an object
// that needs more fails to load, which is reported as the kernel's fault.
static void set_limits(unsigned long long cpu_seconds, unsigned long long address_space) {
    struct rlimit lim;
    lim.rlim_cur = cpu_seconds;
    lim.rlim_max = cpu_seconds + 2;
    if (setrlimit(RLIMIT_CPU, &lim)) die("setting the CPU time limit failed");
    lim.rlim_cur = lim.rlim_max = 0;
    if (setrlimit(RLIMIT_CORE, &lim) || setrlimit(RLIMIT_FSIZE, &lim)) die("setting the file limits failed");
    lim.rlim_cur = lim.rlim_max = 16;  // stdio, the objects' memfds, and what ld.so opens
    if (setrlimit(RLIMIT_NOFILE, &lim)) die("setting the descriptor limit failed");
    lim.rlim_cur = lim.rlim_max = address_space;
    if (setrlimit(RLIMIT_AS, &lim) || setrlimit(RLIMIT_DATA, &lim)) die("setting the memory limits failed");
}

// Started as root (the judge is), the runner becomes `uid`:`gid` with no supplementary groups, so
// that nothing it runs has root's access to files; the drop is checked, not assumed. Started as
// anyone else it is already unprivileged and keeps its identity.
static void drop_identity(unsigned long long uid, unsigned long long gid) {
    if (geteuid() != 0) return;
    if (uid == 0 || gid == 0) die("refusing to run kernels as root");
    if (setgroups(0, nullptr)) die("dropping the supplementary groups failed");
    if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid)) die("setresgid to the sandbox's gid failed (is it mapped in this user namespace?)");
    if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid)) die("setresuid to the sandbox's uid failed (is it mapped in this user namespace?)");
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg)) die("reading the identity back failed");
    if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid || getgroups(0, nullptr) != 0)
        die("dropping root's identity did not take");
}

#if defined(__x86_64__) || defined(__aarch64__)
#define MG_FILTER 1
#if defined(__x86_64__)
#define MG_AUDIT_ARCH AUDIT_ARCH_X86_64
#else
#define MG_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "argument words are read as little-endian");

#define MG_RET(action) BPF_STMT(BPF_RET | BPF_K, (action))
#define MG_LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)offsetof(struct seccomp_data, field))
// The low word of argument i: the kernel reads ints, flags and descriptors as 32 bits.
#define MG_LOAD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (unsigned)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define MG_ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), MG_RET(SECCOMP_RET_ALLOW)
// write(2) only to fd 1, the pipe to the parent. Leaves the syscall number in A when it does not match.
#define MG_WRITE_STDOUT BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 0, 4), MG_LOAD_ARG(0), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1), MG_RET(SECCOMP_RET_ALLOW), MG_RET(SECCOMP_RET_KILL_PROCESS)
// Anything but the running architecture's native calls is killed (on x86-64: the i386 ABI by its
// arch, x32 by the bit in the number).
#if defined(__x86_64__)
#define MG_ARCH_CHECK MG_LOAD(arch), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MG_AUDIT_ARCH, 1, 0), \
    MG_RET(SECCOMP_RET_KILL_PROCESS), MG_LOAD(nr), \
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 1), MG_RET(SECCOMP_RET_KILL_PROCESS)
#else
#define MG_ARCH_CHECK MG_LOAD(arch), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MG_AUDIT_ARCH, 1, 0), \
    MG_RET(SECCOMP_RET_KILL_PROCESS), MG_LOAD(nr)
#endif

// Open flags a loader may pass; anything that writes, creates or truncates is killed.
static const unsigned READ_ONLY_OPEN_FLAGS = O_CLOEXEC | O_LARGEFILE | O_NOCTTY | O_NONBLOCK | O_DIRECTORY | O_NOFOLLOW;

static void install_filter(struct sock_filter* code, size_t n) {
    struct sock_fprog prog;
    prog.len = (unsigned short)n;
    prog.filter = code;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) die("installing a seccomp filter failed");
}

// What every filter before the final one allows: reads, writes to stdout, mappings that are never
// writable and executable at once, mprotect that never grants execution (ld.so only takes
// permissions away: RELRO, holes; load-time code must not make bytes it wrote executable), the heap
// (malloc inside dlopen and the set-up), signal set-up, exit (every exit of the runner is SYS_exit,
// see sys_exit) and the next filter (a filter can only tighten; stacked filters all apply, so each
// must pass what the ones after it allow).
#define MG_SETUP_CALLS \
    MG_ALLOW(__NR_read), \
    MG_WRITE_STDOUT, \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 5), MG_LOAD_ARG(2), \
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 0, 2), \
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1), \
    MG_RET(SECCOMP_RET_KILL_PROCESS), MG_RET(SECCOMP_RET_ALLOW), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 4), MG_LOAD_ARG(2), \
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1), \
    MG_RET(SECCOMP_RET_KILL_PROCESS), MG_RET(SECCOMP_RET_ALLOW), \
    MG_ALLOW(__NR_munmap), \
    MG_ALLOW(__NR_brk), \
    MG_ALLOW(__NR_rt_sigaction), \
    MG_ALLOW(__NR_sigaltstack), \
    MG_ALLOW(__NR_rt_sigreturn), \
    MG_ALLOW(__NR_exit), \
    /* seccomp(SECCOMP_SET_MODE_FILTER, 0, prog) */ \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 6), MG_LOAD_ARG(0), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 0, 3), MG_LOAD_ARG(1), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), MG_RET(SECCOMP_RET_ALLOW), \
    MG_RET(SECCOMP_RET_KILL_PROCESS)

// The loading filter: what dlopen needs to map the objects, found by running the runner under
// strace -f for kernels with and without the math library, and nothing more: read-only opens (in
// an empty root only the objects are there), close, pread64 (ld.so reads program headers that do
// not fit its first read with it) and fstat (older ld.so). The access family answers ENOENT
// instead: some loaders probe files with it, and a probe need not be fatal.
static void enter_loading_filter() {
    struct sock_filter code[] = {
        MG_ARCH_CHECK,
        MG_ALLOW(__NR_pread64),
        // openat(dirfd, path, flags, mode) with read-only flags
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 4), MG_LOAD_ARG(2),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, ~READ_ONLY_OPEN_FLAGS, 0, 1),
        MG_RET(SECCOMP_RET_KILL_PROCESS), MG_RET(SECCOMP_RET_ALLOW),
        MG_ALLOW(__NR_close),
#ifdef __NR_fstat
        MG_ALLOW(__NR_fstat),
#endif
        MG_ALLOW(__NR_newfstatat),
#ifdef __NR_access
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_access, 0, 1), MG_RET(SECCOMP_RET_ERRNO | ENOENT),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_faccessat, 0, 1), MG_RET(SECCOMP_RET_ERRNO | ENOENT),
#ifdef __NR_faccessat2
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_faccessat2, 0, 1), MG_RET(SECCOMP_RET_ERRNO | ENOENT),
#endif
        MG_SETUP_CALLS,
        MG_RET(SECCOMP_RET_KILL_PROCESS),
    };
    install_filter(code, sizeof code / sizeof code[0]);
}

// The second filter, once the objects are mapped and before any of their functions is called
// (their context and shared-memory functions, their entry symbols): the loading filter without
// opening, closing or probing files. Code of an object that runs now finds no file in reach even
// where the root is the host's.
static void enter_mapped_filter() {
    struct sock_filter code[] = {
        MG_ARCH_CHECK,
        MG_SETUP_CALLS,
        MG_RET(SECCOMP_RET_KILL_PROCESS),
    };
    install_filter(code, sizeof code / sizeof code[0]);
}

// The third filter, as tight as seccomp strict mode (which a process in filter mode cannot enter):
// the kernel may read, write its results to stdout, and exit.
static void enter_final_filter() {
    struct sock_filter code[] = {
        MG_ARCH_CHECK,
        MG_ALLOW(__NR_read),
        MG_WRITE_STDOUT,
        MG_ALLOW(__NR_exit),
        MG_ALLOW(__NR_rt_sigreturn),
        MG_RET(SECCOMP_RET_KILL_PROCESS),
    };
    install_filter(code, sizeof code / sizeof code[0]);
}
#else
// No filter is written for other architectures: loading runs under the dropped identity and
// no_new_privs only (and the empty root where there is one), and the kernels under seccomp strict mode.
static void enter_loading_filter() {}
static void enter_mapped_filter() {}
static void enter_final_filter() {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT)) die("entering seccomp strict mode failed");
}
#endif

// A kernel that reads outside its buffers (the neighbours of a __shared__ array, which include
// the kernel object's table of runtime addresses, or an uninitialised local) reads bytes that
// depend on where things were mapped. With address randomisation off, every run maps the same
// things at the same addresses, so such a kernel's outputs, and the verdicts on them, reproduce.
// Re-executes the runner once with randomisation off; where that is not permitted, runs as is.
static void fix_addresses(char** argv) {
    int persona = personality(0xffffffff);
    if (persona == -1 || (persona & ADDR_NO_RANDOMIZE)) return;
    if (personality((unsigned long)persona | ADDR_NO_RANDOMIZE) == -1) return;
    execv("/proc/self/exe", argv);
    personality((unsigned long)persona);  // exec failed: carry on randomised
}

// A failed dlopen is the kernel's fault (its object needs more than the address space allows, or
// a library it names is missing): reported as such, without the /proc path ld.so names it by.
__attribute__((noreturn)) static void report_unloadable(unsigned long long address_space) {
    const char* why = dlerror();
    if (!why) why = "unknown error";
    const char* tail = strrchr(why, ':');  // ld.so's reasons end "...: <why>"
    Line l;
    l.s("unloadable ").u(address_space).s(" ").s(tail && tail[1] ? tail + 2 : why);
    l.emit();
    sys_exit(5);
}

// Maps the object at `path` (a file of the empty root, or a memfd's link) under the loading filter.
// Nothing of it is called here; code that runs inside dlopen is what the object wall refuses.
static void* map_object(const char* path, unsigned long long address_space) {
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) report_unloadable(address_space);
    return handle;
}

// Makes the mapped object `handle` g_objects[i] and resolves every launch's entry in it, under the
// mapped filter (an entry resolved through an ifunc would run its resolver here); returns an
// address inside it (for the checks' lookup of its data).
static void* bind_object(int i, void* handle) {
    typedef MgCtx* (*CtxFn)(void);
    typedef void (*RangeFn)(unsigned char**, unsigned char**, unsigned char**, size_t*);
    CtxFn context = (CtxFn)dlsym(handle, "__mg_context");
    RangeFn shared_range = (RangeFn)dlsym(handle, "__mg_shared_memory");
    struct link_map* map = nullptr;
    if (!context || !shared_range) die("kernel object lacks mutagym's context symbols");
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) || !map) die("finding the kernel object's load address failed");
    KernelObject& o = g_objects[i];
    o.ctx = context();
    o.base = (uintptr_t)map->l_addr;
    shared_range(&o.smem_static_begin, &o.smem_static_end, &o.smem_dynamic, &o.smem_dynamic_capacity);
    for (int c = 0; c < g_ncases; c++) {
        for (int li = 0; li < g_cases[c].nlaunches; li++) {
            Launch* L = &g_cases[c].launches[li];
            L->entry[i] = (EntryFn)dlsym(handle, L->symbol);
            if (!L->entry[i]) { Line l; l.s("fatal missing entry ").s(L->symbol); l.emit(); sys_exit(2); }
        }
    }
    return (void*)context;
}

int main(int argc, char** argv) {
    (void)argc;
    fix_addresses(argv);
    int stack_marker;
    struct rlimit stack_lim;
    getrlimit(RLIMIT_STACK, &stack_lim);
    g_main_stack_top = (uintptr_t)&stack_marker;
    g_main_stack_limit = stack_lim.rlim_cur == RLIM_INFINITY ? (size_t)8 << 20 : stack_lim.rlim_cur;
    g_req = read_all_stdin();
    g_tok = g_req;
    expect("mutagym-run");
    expect("1");
    expect("object"); int object_fd = (int)next_u64();   // descriptors the parent opened
    expect("memfd"); int memfd = (int)next_u64(); g_mem_bytes = next_u64();
    expect("fibers"); g_fiber_mode = (int)next_u64();
    expect("schedule"); g_schedule = (int)next_u64(); g_seed = next_u64();
    expect("stack"); g_stack_bytes = next_u64();
    expect("cpu_seconds"); unsigned long long cpu_seconds = next_u64();
    expect("max_threads"); g_max_threads = (unsigned)next_u64();
    expect("printf_bytes"); g_print_cap = next_u64();
    expect("address_space"); unsigned long long address_space = next_u64();
    expect("identity"); unsigned long long uid = next_u64(), gid = next_u64();
    expect("root"); int root_mode = (int)next_u64();   // 0 the host's, 1 empty if possible, 2 empty or nothing
    expect("race"); g_race_check = (int)next_u64();
    expect("bookkeeping"); g_nbookkeeping = (unsigned)next_u64();
    if (g_nbookkeeping > BOOKKEEPING_CAPACITY) die("too many bookkeeping ranges");
    for (unsigned i = 0; i < g_nbookkeeping; i++) {
        g_bookkeeping_offsets[i][0] = next_u64();
        g_bookkeeping_offsets[i][1] = next_u64();
    }
    expect("unchecked"); char* unchecked_fd = next_token();   // "-": every block runs the checked object
    expect("shared_data"); g_nshared_data = (unsigned)next_u64();
    g_shared_data = (unsigned long long(*)[2])calloc(g_nshared_data ? g_nshared_data : 1, sizeof *g_shared_data);
    if (!g_shared_data) die("allocating the shared data ranges failed");
    for (unsigned i = 0; i < g_nshared_data; i++) {
        g_shared_data[i][0] = next_u64();
        g_shared_data[i][1] = next_u64();
    }

    g_mem = (unsigned char*)mmap(nullptr, g_mem_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (g_mem == MAP_FAILED) die("mapping the buffers failed");
    close(memfd);
    expect("protect");
    unsigned long long nprot = next_u64();
    size_t npages = (g_mem_bytes + 4095) / 4096;
    unsigned char* writable_pages = (unsigned char*)malloc(npages ? npages : 1);
    if (!writable_pages) die("allocating the page map failed");
    memset(writable_pages, 1, npages);
    for (unsigned long long i = 0; i < nprot; i++) {
        unsigned long long off = next_u64(), len = next_u64(), mode = next_u64();
        int prot = mode == 0 ? PROT_NONE : PROT_READ;
        if (mprotect(g_mem + off, len, prot)) die("mprotect failed");
        for (unsigned long long pg = off / 4096; pg < (off + len + 4095) / 4096 && pg < npages; pg++) writable_pages[pg] = 0;
    }
    // The objects where loading will find them, while the runner may still write files: in the
    // empty root, or in memfds where the root stays the host's.
    int sources[2] = {object_fd, strcmp(unchecked_fd, "-") ? atoi(unchecked_fd) : -1};
    load_libraries();
    int empty_root = root_mode != 0 && enter_empty_root();
    if (root_mode == 2 && !empty_root)
        die("an empty root is required (MUTAGYM_EMPTY_ROOT=1) and this machine refuses the namespaces it needs");
    char object_paths[2][40];
    int memfds[2] = {-1, -1};
    for (int i = 0; i < 2 && sources[i] >= 0; i++) {
        if (empty_root) {
            place_object(sources[i], OBJECT_FILES[i]);
            snprintf(object_paths[i], sizeof object_paths[i], "%s", OBJECT_FILES[i]);
        } else {
            memfds[i] = copy_object(sources[i], object_paths[i], sizeof object_paths[i]);
        }
        close(sources[i]);
    }
    if (empty_root) seal_empty_root();
    drop_namespace_capabilities();
    set_limits(cpu_seconds, address_space);

    // The cases and everything the kernel will touch, before the object is loaded: what the object
    // takes of the address space then cannot make the runner's own set-up fail.
    expect("cases");
    g_first_case = (int)next_u64();
    g_ncases = (int)next_u64();
    g_cases = (Case*)calloc((size_t)g_ncases, sizeof(Case));
    if (!g_cases) die("allocating the cases failed");
    for (int c = 0; c < g_ncases; c++) {
        expect("case");
        Case* C = &g_cases[c];
        C->nlaunches = (int)next_u64();
        C->launches = (Launch*)calloc((size_t)C->nlaunches, sizeof(Launch));
        C->nconstants = (int)next_u64();
        C->salt = next_u64();
        C->constants = (ConstantCopy*)calloc((size_t)(C->nconstants ? C->nconstants : 1), sizeof(ConstantCopy));
        if (!C->launches || !C->constants) die("allocating the launches failed");
        for (int k = 0; k < C->nconstants; k++) {
            expect("constant");
            ConstantCopy* K = &C->constants[k];
            K->object_offset = next_u64(); K->mem_offset = next_u64(); K->bytes = next_u64();
            if (K->mem_offset > g_mem_bytes || K->bytes > g_mem_bytes - K->mem_offset) die("a constant's input lies outside the buffers");
        }
        for (int li = 0; li < C->nlaunches; li++) {
            Launch* L = &C->launches[li];
            expect("launch");
            L->symbol = next_token();
            L->grid.x = (unsigned)next_u64(); L->grid.y = (unsigned)next_u64(); L->grid.z = (unsigned)next_u64();
            L->block.x = (unsigned)next_u64(); L->block.y = (unsigned)next_u64(); L->block.z = (unsigned)next_u64();
            L->shared_bytes = next_u64();
            L->nargs = (int)next_u64();
            if (L->nargs > 64) die("too many arguments");
            for (int a = 0; a < L->nargs; a++) {
                char* kind = next_token();
                unsigned long long v = next_u64();
                L->slots[a] = kind[0] == 'b' ? (unsigned long long)(uintptr_t)(g_mem + v) : v;
                L->args[a] = &L->slots[a];
            }
        }
    }
    if (g_fiber_mode) allocate_fibers();
    race_allocate(g_max_threads, writable_pages, npages);
    free(writable_pages);
    g_order = (unsigned*)calloc(g_max_threads ? g_max_threads : 1, sizeof(unsigned));
    g_print_buf = g_print_cap ? (char*)malloc(g_print_cap) : nullptr;
    size_t altsize = 1 << 16;
    void* altstack = malloc(altsize);
    if (!g_order || (g_print_cap && !g_print_buf) || !altstack) die("allocating the run's state failed");

    drop_identity(uid, gid);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("setting no_new_privs failed");
    enter_loading_filter();
    Line loading;   // from here on the submission's code may run: a hang is the kernel's timeout
    loading.s("loading ").s(empty_root ? "empty-root" : "host-root");
    loading.emit();

    void* handles[2] = {map_object(object_paths[CHECKED], address_space),
                        sources[UNCHECKED] >= 0 ? map_object(object_paths[UNCHECKED], address_space) : nullptr};
    for (int fd : memfds)
        if (fd >= 0) close(fd);
    enter_mapped_filter();
    void* context = bind_object(CHECKED, handles[CHECKED]);
    if (handles[UNCHECKED]) {
        bind_object(UNCHECKED, handles[UNCHECKED]);
        g_nobjects = 2;
    }
    g_ctx = g_objects[CHECKED].ctx;
    g_smem_static_begin = g_objects[CHECKED].smem_static_begin;
    g_smem_static_end = g_objects[CHECKED].smem_static_end;
    g_smem_dynamic = g_objects[CHECKED].smem_dynamic;
    g_smem_dynamic_capacity = g_objects[CHECKED].smem_dynamic_capacity;
    race_attach_object(context);

    {   // warm vsnprintf's lazy state (locale, tables) while system calls are still allowed
        char tmp[128];
        snprintf(tmp, sizeof tmp, "%d %u %f %e %g %s %x %c %ld %lld %p %5.2f", 1, 2u, 3.0, 4.0, 5.0, "s", 6, 'c', 7L, 8LL, (void*)tmp, 9.0);
    }
    install_handlers(altstack, altsize);
    free(g_req);

    Line ready;
    ready.s("ready");
    ready.emit();
    enter_final_filter();

    for (int c = 0; c < g_ncases; c++) {
        g_case = g_first_case + c;
        race_case_begins();
        Case* C = &g_cases[c];
        case_draws(C->salt);
        for (int k = 0; k < C->nconstants; k++)
            for (int o = 0; o < g_nobjects; o++)
                memcpy((unsigned char*)g_objects[o].base + C->constants[k].object_offset,
                       g_mem + C->constants[k].mem_offset, C->constants[k].bytes);
        int failed = 0;
        g_in_kernel = 1;
        for (int li = 0; li < C->nlaunches && !failed; li++) failed = run_launch(li, &C->launches[li]);
        g_in_kernel = 0;
        flush_printf(g_case);
        if (failed) sys_exit(4);
        Line l;
        l.s("result ").u(g_case).s(" ok");
        l.emit();
    }
    sys_exit(0);
}
