// race.h -- the runner's data-race, state and spin checks (included once, by runner.cpp).
//
// Kernels built for judging are compiled with g++'s thread-sanitizer instrumentation but without
// its runtime: every load and store the compiler emits calls one of the __tsan_* functions below
// first. A GPU runs the threads of a block and the blocks of a grid concurrently; the emulator runs
// them one at a time, so a missing barrier or atomic only shows here if some thread order exposes
// it. These checks look at *ordering* instead of values, which no order can hide:
//
// * Data races (outcome data_race). Two accesses to one byte of device memory conflict when they
//   come from different threads, at least one is a plain write, and neither is atomic or volatile
//   (the PTX memory model makes volatile accesses relaxed, i.e. not racy). Two accesses of one block
//   are ordered by a __syncthreads between them, or, for two lanes of one warp, by a warp collective
//   both took part in (a shuffle or __syncwarp orders only the lanes of its mask). Accesses of two
//   blocks of one launch are ordered only by release and acquire: a thread that executed
//   __threadfence and then an atomic or volatile store releases what it and (through earlier
//   barriers) its block wrote; a thread that then performs an atomic or volatile load acquires it,
//   as does its whole block after its next barrier or its warp after a collective. Launches are
//   ordered. A plain write that leaves the bytes as they were (several threads storing one value)
//   conflicts with nothing: no reader can tell it happened.
// * State across launches (outcome stateful_kernel). The writable data of the kernel's object (its
//   __device__ variables) is snapshotted once loaded. A launch that reads a word it has not written
//   itself, and that an earlier launch changed, carries state between launches: on a GPU its result
//   would depend on how often and in what order it ran. Scratch rewritten before it is read is fine.
// * Spins (outcome sync_error). While a thread runs here no other thread does, so a thread that keeps
//   polling one address with atomics or volatile loads and sees the same value 2^22 times waits for a
//   write no one can make: it is reported as such instead of running into the time limit.
//
// What is checked: the watched blocks of each launch (at most 16, see choose_watched_blocks) and, in
// each case, at most RACE_BUDGET accesses; the rest runs with the checks asleep (a call that returns).
//
// Shadow memory: 16 bytes per 4-byte word of device memory (global buffers that are writable, and
// shared memory), a record of the last write and of the last read, each packed into 64 bits: the
// event counter when it happened (32 bits), the thread (10), the bytes of the word it touched (4) and
// a flag (several readers / several writers of one value). Records are never cleared: the event
// counter grows across blocks and launches, so a record older than the running block or launch is
// told apart by its count. Only conflicting accesses that neither order separates are reported;
// a few interleavings are approximated on the side of silence (a record keeps one thread).

#include <link.h>

static int g_race_check;                  // set by the request: instrumentation reports arrive only
                                          // from objects built with it, the shadow is allocated here
struct RaceCell { uint64_t w, r; };
static RaceCell* g_gshadow;               // one cell per 4 bytes of g_mem
static unsigned char* g_page_writable;    // per page of g_mem: 1 if a kernel may write it
static RaceCell* g_sshadow;               // static shared memory, then dynamic shared memory
static size_t g_sshadow_static_words;
static uint32_t g_ev = 1;                 // the event counter: blocks, barriers, collectives
static uint32_t g_launch_ev, g_block_ev, g_barrier_ev;
static uint32_t* g_warp_full_ev;          // per warp: last collective every live lane took part in
static uint32_t* g_pair_ev;               // per warp, 32 x 32: last collective both lanes took part in
static uint32_t* g_thread_acq;            // per thread: event of its last acquire
static uint32_t* g_thread_fence;          // per thread: event of its last __threadfence
static uint32_t g_block_acq_all;          // an acquire by any thread, made the block's by a barrier
static int g_block_acq_pending;
static unsigned g_race_tid;               // linear index in its block of the running thread
static int g_race_disabled;               // the event counter ran out (documented: checks stop)
// The checks' budget per case: the first RACE_BUDGET plain accesses of a case to writable device
// memory or shared memory are checked (reads of inputs are free), then the checks sleep until the
// next case, so that a large case costs a bounded time more than a plain run (~20 ms): every block
// of most cases, the first blocks (in the schedule's order) of the largest.
static const long long RACE_BUDGET = 1ll << 21;
static long long g_race_budget;
static int g_race_asleep;

// Blocks of the running launch that released, in execution order: which of their accesses a
// release covered (those before the barrier event `barrier_ev`, and those of thread `tid` up to
// `ev`). Past the capacity, every block counts as having released everything (never a false race).
struct Release { uint32_t start_ev, end_ev, barrier_ev, ev; unsigned tid; };
static const unsigned RELEASE_CAPACITY = 4096;
static Release g_releases[RELEASE_CAPACITY];
static unsigned g_nreleases;
static int g_release_overflow;
// Block start events of the running launch and their linear indices, to name the other block of a
// race (binary search); past the capacity the other block is "another block".
static const unsigned BLOCK_LOG_CAPACITY = 1u << 16;
static uint32_t* g_block_log_ev;
static unsigned long long* g_block_log_id;
static unsigned g_block_log_n;

// Object data (__device__ variables): snapshot, and the launch event of each word's last write.
static unsigned char* g_data_lo;
static size_t g_data_bytes;
static unsigned char* g_data_image;
static uint32_t* g_data_written;

// The running thread's last plain write, checked at its next access or stop: a write that left the
// bytes as they were is not a conflict (see above).
struct PendingWrite {
    uintptr_t addr;
    void* pc;
    RaceCell* cell;            // a write within one word: its cell, the bytes, where, and the old word
    unsigned mask;
    int space;
    size_t at;
    uint32_t word;
    unsigned size;             // otherwise: its size and old bytes
    unsigned char old[64];
};
static PendingWrite g_pending;

// Spin detection: the running thread's last atomic or volatile read, and how often in a row it saw
// that address hold the same value.
static uintptr_t g_spin_addr;
static unsigned long long g_spin_value;
static unsigned g_spin_count;
static const unsigned SPIN_LIMIT = 1u << 22;

static uintptr_t g_object_base;           // the kernel object's load address, for pc offsets
// Ranges of the object's data that are the runner's bookkeeping, not the kernel's state (g++'s
// static guards): object offsets from the request, addresses once the object is loaded.
static const unsigned BOOKKEEPING_CAPACITY = 64;
static unsigned long long g_bookkeeping_offsets[BOOKKEEPING_CAPACITY][2];
static uintptr_t g_bookkeeping[BOOKKEEPING_CAPACITY][2];
static unsigned g_nbookkeeping;

enum { SPACE_GLOBAL = 0, SPACE_SHARED = 1, SPACE_DYNAMIC = 2 };   // the last two: shared memory
static const uint64_t FLAG_SHARED = 1;    // read record: several unordered readers; write record:
                                          // several unordered writers of the same bytes

static inline uint64_t race_record(unsigned mask) {
    return (uint64_t)g_ev << 32 | (uint64_t)(g_race_tid & 1023) << 6 | (uint64_t)(mask & 15) << 2;
}
static inline uint32_t rec_ev(uint64_t r) { return (uint32_t)(r >> 32); }
static inline unsigned rec_tid(uint64_t r) { return (unsigned)(r >> 6) & 1023; }
static inline unsigned rec_mask(uint64_t r) { return (unsigned)(r >> 2) & 15; }

// ------------------------------------------------------------------ set-up (before the sandbox)
static void race_allocate(unsigned max_threads, const unsigned char* writable_pages, size_t npages) {
    if (g_race_check) {
        size_t words = (g_mem_bytes + 3) / 4;
        g_gshadow = (RaceCell*)mmap(nullptr, words * sizeof(RaceCell), PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (g_gshadow == MAP_FAILED) die("allocating the race detector's shadow memory failed");
    }
    g_page_writable = (unsigned char*)calloc(npages ? npages : 1, 1);
    if (npages) memcpy(g_page_writable, writable_pages, npages);
    unsigned warps = (max_threads + 31) / 32;
    g_warp_full_ev = (uint32_t*)calloc(warps ? warps : 1, sizeof(uint32_t));
    g_pair_ev = (uint32_t*)calloc((size_t)(warps ? warps : 1) * 1024, sizeof(uint32_t));
    g_thread_acq = (uint32_t*)calloc(max_threads ? max_threads : 1, sizeof(uint32_t));
    g_thread_fence = (uint32_t*)calloc(max_threads ? max_threads : 1, sizeof(uint32_t));
    g_block_log_ev = (uint32_t*)calloc(BLOCK_LOG_CAPACITY, sizeof(uint32_t));
    g_block_log_id = (unsigned long long*)calloc(BLOCK_LOG_CAPACITY, sizeof(unsigned long long));
    if (!g_page_writable || !g_warp_full_ev || !g_pair_ev || !g_thread_acq || !g_thread_fence ||
        !g_block_log_ev || !g_block_log_id)
        die("allocating the race detector's state failed");
}

static int find_object_data(struct dl_phdr_info* info, size_t, void* target) {
    // The object whose load range holds `target` (an address inside it): its writable segment.
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if ((uintptr_t)target < lo || (uintptr_t)target >= hi) continue;
        g_object_base = info->dlpi_addr;
        for (int j = 0; j < info->dlpi_phnum; j++) {
            const ElfW(Phdr)* w = &info->dlpi_phdr[j];
            if (w->p_type == PT_LOAD && (w->p_flags & PF_W)) {
                g_data_lo = (unsigned char*)(info->dlpi_addr + w->p_vaddr);
                g_data_bytes = w->p_memsz;
            }
        }
        return 1;
    }
    return 0;
}

// After the object is loaded: shadow for its shared memory, and the snapshot of its data.
static void race_attach_object(void* inside_object) {
    size_t static_bytes = (size_t)(g_smem_static_end - g_smem_static_begin);
    g_sshadow_static_words = (static_bytes + 3) / 4;
    size_t words = g_sshadow_static_words + (g_smem_dynamic_capacity + 3) / 4;
    if (g_race_check) g_sshadow = (RaceCell*)calloc(words ? words : 1, sizeof(RaceCell));
    dl_iterate_phdr(find_object_data, inside_object);
    for (unsigned i = 0; i < g_nbookkeeping; i++) {
        g_bookkeeping[i][0] = g_object_base + g_bookkeeping_offsets[i][0];
        g_bookkeeping[i][1] = g_bookkeeping[i][0] + g_bookkeeping_offsets[i][1];
    }
    if (g_data_bytes) {
        g_data_image = (unsigned char*)malloc(g_data_bytes);
        g_data_written = (uint32_t*)calloc((g_data_bytes + 3) / 4, sizeof(uint32_t));
        if (!g_data_image || !g_data_written) die("allocating the state check's snapshot failed");
        memcpy(g_data_image, g_data_lo, g_data_bytes);
    }
    if (g_race_check && !g_sshadow) die("allocating the race detector's shared-memory shadow failed");
}

// ------------------------------------------------------------------ events (called by the runner)
static inline void race_next_event() {
    if (++g_ev >= 0xfffffff0u) g_race_disabled = g_race_asleep = 1;
}
static void race_case_begins() {
    g_race_budget = RACE_BUDGET;
    g_race_asleep = g_race_disabled;
}
// The blocks a launch's checks watch, at most 16 whatever the grid: an anchor block drawn from the
// schedule's seed, and along each dimension of the grid longer than one, the blocks that differ from
// it in that coordinate alone, at the first two, the last two and the anchor's neighbour. A race
// inside a block shows in any block; one between blocks needs two that touch the same element,
// which blocks one coordinate apart are (a row's split into blocks, a split-K's partial sums, a
// halo, the tail); the last ones are there for the ragged edge. Only watched blocks are checked
// (and spend the budget); the others run with the checks asleep.
static const unsigned WATCHED_PER_DIMENSION = 6;
static unsigned g_anchor[3];
static unsigned g_watched[3][WATCHED_PER_DIMENSION];

static unsigned long long race_mix(unsigned long long z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static void choose_watched_blocks() {
    const unsigned extent[3] = {g_ctx->grid_dim.x, g_ctx->grid_dim.y, g_ctx->grid_dim.z};
    for (int d = 0; d < 3; d++) {
        unsigned n = extent[d] ? extent[d] : 1;
        unsigned r = (unsigned)(race_mix(g_seed ^ ((unsigned long long)g_launch << 8) ^ (unsigned long long)d) % n);
        g_anchor[d] = r;
        const unsigned picks[WATCHED_PER_DIMENSION] = {0, 1 % n, (n - 2 + n) % n, n - 1, r, (r + 1) % n};
        for (unsigned k = 0; k < WATCHED_PER_DIMENSION; k++) g_watched[d][k] = picks[k];
    }
}
static bool block_watched(const Dim3& b) {
    const unsigned coord[3] = {b.x, b.y, b.z};
    int off = -1;   // the one coordinate that differs from the anchor, if any
    for (int d = 0; d < 3; d++) {
        if (coord[d] == g_anchor[d]) continue;
        if (off >= 0) return false;
        off = d;
    }
    if (off < 0) return true;
    for (unsigned k = 0; k < WATCHED_PER_DIMENSION; k++)
        if (coord[off] == g_watched[off][k]) return true;
    return false;
}
// Whether the checks will watch block `b` of the running launch: the runner runs the others on the
// unchecked object when it has one.
static bool race_watches(const Dim3& b) {
    return !g_race_disabled && g_race_budget > 0 && block_watched(b);
}

static void race_launch_begins() {
    race_next_event();
    g_launch_ev = g_ev;
    choose_watched_blocks();
    g_nreleases = 0;
    g_release_overflow = 0;
    g_block_log_n = 0;
}
static void race_block_begins(unsigned long long block_linear) {
    race_next_event();
    g_block_ev = g_barrier_ev = g_ev;
    g_block_acq_all = 0;
    g_block_acq_pending = 0;
    if (g_block_log_n < BLOCK_LOG_CAPACITY) {
        g_block_log_ev[g_block_log_n] = g_ev;
        g_block_log_id[g_block_log_n++] = block_linear;
    }
    g_spin_count = 0;
    g_race_asleep = !race_watches(g_ctx->block_idx);
}
static void race_block_ends() {
    if (g_nreleases && g_releases[g_nreleases - 1].start_ev == g_block_ev)
        g_releases[g_nreleases - 1].end_ev = g_ev;
}
static void race_barrier_completes() {
    race_next_event();
    g_barrier_ev = g_ev;
    if (g_block_acq_pending) g_block_acq_all = g_ev;
}
// A warp collective completed for the lanes in `group`; `live` are the lanes still running.
static void race_warp_completes(unsigned warp, unsigned group, unsigned live) {
    race_next_event();
    if ((group & live) == live) {
        g_warp_full_ev[warp] = g_ev;
    } else {
        uint32_t* pairs = g_pair_ev + (size_t)warp * 1024;
        for (unsigned a = 0; a < 32; a++) {
            if (!(group >> a & 1)) continue;
            for (unsigned b = 0; b < 32; b++)
                if (group >> b & 1) pairs[a * 32 + b] = g_ev;
        }
    }
    if (g_block_acq_pending) {   // an acquire by one lane becomes the others'
        int any = 0;
        for (unsigned l = 0; l < 32 && !any; l++)
            if ((group >> l & 1) && g_thread_acq[warp * 32 + l] >= g_block_ev) any = 1;
        if (any)
            for (unsigned l = 0; l < 32; l++)
                if (group >> l & 1) g_thread_acq[warp * 32 + l] = g_ev;
    }
}
static inline void race_thread_switched(unsigned linear) {
    g_race_tid = linear;
    g_spin_count = 0;
}

// ------------------------------------------------------------------ reports
static void describe_block_of(Line& l, uint32_t ev) {
    // The block whose start event is the last one at or before `ev`.
    unsigned lo = 0, hi = g_block_log_n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (g_block_log_ev[mid] <= ev) lo = mid + 1; else hi = mid;
    }
    if (lo == 0 || (lo == g_block_log_n && g_block_log_n == BLOCK_LOG_CAPACITY)) { l.s("another"); return; }
    unsigned long long b = g_block_log_id[lo - 1];
    const Dim3& g = g_ctx->grid_dim;
    l.u(b % g.x).s(",").u((b / g.x) % g.y).s(",").u(b / ((unsigned long long)g.x * g.y));
}

// A thread's coordinates in the running block from its linear index.
static Line& describe_linear(Line& l, unsigned linear) {
    const Dim3& b = g_ctx->block_dim;
    return l.u(linear % b.x).s(",").u((linear / b.x) % b.y).s(",").u(linear / (b.x * b.y));
}

__attribute__((noreturn)) static void race_report(const char* kind, int space, size_t byte, uint64_t other,
                                                  void* pc) {
    // result <case> data_race <kind> <global|shared> <byte> pc <offset> where ... other thread (..) block (..)
    Line l;
    l.s("result ").i(g_case).s(" data_race ").s(kind);
    if (space == SPACE_GLOBAL) l.s(" offset ").u(byte);
    else if (space == SPACE_SHARED) l.s(" static ").u((uintptr_t)g_smem_static_begin + byte - g_object_base);
    else l.s(" dynamic ").u(byte);
    l
        .s(" pc ").u((uintptr_t)pc - g_object_base).s(" other (");
    describe_linear(l, rec_tid(other)).s(") block (");
    if (rec_ev(other) < g_block_ev) describe_block_of(l, rec_ev(other));
    else l.u(g_ctx->block_idx.x).s(",").u(g_ctx->block_idx.y).s(",").u(g_ctx->block_idx.z);
    l.s(") where launch ").i(g_launch).s(" block (").u(g_ctx->block_idx.x).s(",").u(g_ctx->block_idx.y)
        .s(",").u(g_ctx->block_idx.z).s(") thread (");
    describe_linear(l, g_race_tid).s(")");
    l.emit();
    sys_exit(4);
}

// ------------------------------------------------------------------ ordering
// Whether a recorded access of another block of this launch is ordered before the running thread.
static bool cross_block_ordered(uint64_t rec) {
    uint32_t acquired = g_thread_acq[g_race_tid] > g_block_acq_all ? g_thread_acq[g_race_tid] : g_block_acq_all;
    if (acquired < g_block_ev) return false;          // nothing acquired in this block
    if (g_release_overflow) return true;
    uint32_t ev = rec_ev(rec);
    unsigned lo = 0, hi = g_nreleases;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (g_releases[mid].start_ev <= ev) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return false;
    const Release& r = g_releases[lo - 1];
    if (ev > r.end_ev) return false;                  // the record's block did not release
    return ev < r.barrier_ev || (rec_tid(rec) == r.tid && ev <= r.ev);
}

// Whether record `rec` is ordered before (or is of) the running thread.
static inline __attribute__((always_inline)) bool ordered_before(uint64_t rec, int space) {
    uint32_t ev = rec_ev(rec);
    if (ev >= g_block_ev) {                           // this block
        if (g_barrier_ev > ev) return true;
        unsigned t = rec_tid(rec);
        if (t == (g_race_tid & 1023)) return true;
        if (t / 32 != g_race_tid / 32) return false;
        unsigned w = t / 32;
        return g_warp_full_ev[w] > ev || g_pair_ev[(size_t)w * 1024 + (t % 32) * 32 + g_race_tid % 32] > ev;
    }
    if (ev < g_launch_ev) return true;                // an earlier launch, or never
    return space != SPACE_GLOBAL || cross_block_ordered(rec);   // another block of this launch
}

// ------------------------------------------------------------------ accesses
static inline RaceCell* race_cell(uintptr_t a, int* space, size_t* byte) {
    uintptr_t off = a - (uintptr_t)g_mem;
    if (off < g_mem_bytes) {
        if (!g_gshadow || !g_page_writable[off >> 12]) return nullptr;   // inputs: nothing to race with
        *space = SPACE_GLOBAL; *byte = off;
        return &g_gshadow[off >> 2];
    }
    if (!g_sshadow) return nullptr;
    off = a - (uintptr_t)g_smem_static_begin;
    if (off < (uintptr_t)(g_smem_static_end - g_smem_static_begin)) {
        *space = SPACE_SHARED; *byte = off;
        return &g_sshadow[off >> 2];
    }
    off = a - (uintptr_t)g_smem_dynamic;
    if (off < g_smem_dynamic_capacity) {
        *space = SPACE_DYNAMIC; *byte = off;
        return &g_sshadow[g_sshadow_static_words + (off >> 2)];
    }
    return nullptr;
}

// The runner's own bytes inside the object's data, which are not the kernel's state: thread indices,
// shared memory (poisoned per block), and the guards g++ gives some static arrays (the request).
static bool runners_bytes(uintptr_t a, size_t size) {
    if (a + size > (uintptr_t)g_ctx && a < (uintptr_t)g_ctx + sizeof(MgCtx)) return true;
    if (a + size > (uintptr_t)g_smem_static_begin && a < (uintptr_t)g_smem_static_end) return true;
    if (a + size > (uintptr_t)g_smem_dynamic && a < (uintptr_t)g_smem_dynamic + g_smem_dynamic_capacity) return true;
    for (unsigned i = 0; i < g_nbookkeeping; i++)
        if (a + size > g_bookkeeping[i][0] && a < g_bookkeeping[i][1]) return true;
    return false;
}

static void state_check_read(uintptr_t a, unsigned size) {
    uintptr_t off = a - (uintptr_t)g_data_lo;
    if (off >= g_data_bytes || runners_bytes(a, size)) return;
    size_t end = off + size <= g_data_bytes ? off + size : g_data_bytes;
    for (size_t w = off >> 2; w <= (end - 1) >> 2; w++) {
        if (g_data_written[w] == g_launch_ev) continue;
        size_t lo = w * 4, hi = lo + 4 <= g_data_bytes ? lo + 4 : g_data_bytes;
        if (memcmp(g_data_lo + lo, g_data_image + lo, hi - lo) == 0) continue;
        Line l;
        l.s("result ").i(g_case).s(" stateful_kernel data ").u((uintptr_t)(g_data_lo + lo) - g_object_base).s(" where launch ").i(g_launch).s(" block (")
            .u(g_ctx->block_idx.x).s(",").u(g_ctx->block_idx.y).s(",").u(g_ctx->block_idx.z).s(") thread (");
        describe_linear(l, g_race_tid).s(")");
        l.emit();
        sys_exit(4);
    }
}
// Blocks that ran on the unchecked object changed the kernel's data in the running launch, and which
// words they wrote is not known (a write of the value already there leaves no trace): every word
// counts as written by this launch, so no read of it is taken for state from an earlier one.
static void race_data_rewritten() {
    for (size_t w = 0; w < (g_data_bytes + 3) / 4; w++) g_data_written[w] = g_launch_ev;
}
static void state_note_write(uintptr_t a, size_t size) {
    uintptr_t off = a - (uintptr_t)g_data_lo;
    if (off >= g_data_bytes || runners_bytes(a, size)) return;
    size_t end = off + size <= g_data_bytes ? off + size : g_data_bytes;
    for (size_t w = off >> 2; w <= (end - 1) >> 2; w++) g_data_written[w] = g_launch_ev;
}

// Whether an access at `a` may touch the kernel's state: the object's data, less its static shared
// memory (poisoned per block, so never state; `runners_bytes` would say so at a call's cost, and
// static shared memory is where most writes go).
static inline bool state_bytes(uintptr_t a) {
    return (uintptr_t)(a - (uintptr_t)g_data_lo) < g_data_bytes &&
           (uintptr_t)(a - (uintptr_t)g_smem_static_begin) >= (uintptr_t)(g_smem_static_end - g_smem_static_begin);
}

// The bytes of the word at `a` (4-aligned `word`) that an access of `size` at `a` touches.
static inline unsigned byte_mask(uintptr_t word, uintptr_t a, unsigned size) {
    uintptr_t lo = a > word ? a - word : 0, hi = a + size - word < 4 ? a + size - word : 4;
    return ((1u << hi) - 1) & ~((1u << lo) - 1);
}

// Settles one word of the running thread's pending write: if the write changed the bytes, it
// conflicts with the unordered accesses of other threads and becomes the word's last write; if not,
// it is noted only (several writers of the same bytes).
static inline __attribute__((always_inline)) void settle_word(RaceCell* c, unsigned mask, int space, size_t at,
                                                              int changed, void* pc) {
    uint64_t w = c->w;
    if (!changed) {
        if (rec_mask(w) & mask && !ordered_before(w, space)) c->w = w | FLAG_SHARED;
        return;
    }
    if (rec_mask(w) & mask && !(w & FLAG_SHARED) && !ordered_before(w, space))
        race_report("write-write", space, at, w, pc);
    uint64_t r = c->r;
    if (rec_mask(r) & mask && !ordered_before(r, space)) race_report("read-write", space, at, r, pc);
    c->w = race_record(mask);
}
static void settle_write(uintptr_t addr, unsigned size, int changed, void* pc) {
    uintptr_t first = addr & ~(uintptr_t)3, last = (addr + size - 1) & ~(uintptr_t)3;
    for (uintptr_t word = first; word <= last; word += 4) {
        int space; size_t byte;
        RaceCell* c = race_cell(word, &space, &byte);
        if (c) settle_word(c, byte_mask(word, addr, size), space, byte + (word < addr ? addr - word : 0), changed, pc);
    }
}
static void race_settle() {
    if (!g_pending.addr) return;
    PendingWrite p = g_pending;
    g_pending.addr = 0;
    if (p.cell) {   // within one word: the word's other bytes cannot have changed since
        uint32_t now;
        memcpy(&now, (const void*)(p.addr & ~(uintptr_t)3), 4);
        settle_word(p.cell, p.mask, p.space, p.at, now != p.word, p.pc);
    } else {
        settle_write(p.addr, p.size, memcmp((const void*)p.addr, p.old, p.size) != 0, p.pc);
    }
}

// Whether a tracked access is checked: the case's budget is not spent (a spent one sleeps).
static inline bool race_spend() {
    if (--g_race_budget >= 0) return true;
    g_race_asleep = 1;
    return false;
}

static inline __attribute__((always_inline)) void read_word(RaceCell* c, unsigned mask, int space, size_t at,
                                                            void* pc) {
    uint64_t w = c->w;
    if (rec_mask(w) & mask && !(w & FLAG_SHARED) && !ordered_before(w, space))
        race_report("write-read", space, at, w, pc);
    // The word's read record: this read alone when the last one is ordered before it (its own
    // thread's included) or touched other bytes (neighbouring half-precision elements read by
    // their own threads: one record cannot name two readers, and merging them would make each
    // thread's write of its own bytes conflict with the other's read); else several readers.
    uint64_t r = c->r;
    uint64_t next = ordered_before(r, space) || !(rec_mask(r) & mask) ? race_record(mask)
                                                                       : r | FLAG_SHARED | (uint64_t)mask << 2;
    if (next != r) c->r = next;
}

static inline __attribute__((always_inline)) void race_read(uintptr_t a, unsigned size, void* pc) {
    if (g_race_asleep) return;
    if (g_pending.addr) race_settle();
    int space; size_t byte;
    uintptr_t word = a & ~(uintptr_t)3;
    if ((a & 3) + size <= 4) {   // within one word: the common case
        RaceCell* c = race_cell(word, &space, &byte);
        if (c) {
            if (race_spend()) read_word(c, byte_mask(word, a, size), space, byte + (a - word), pc);
            return;
        }
    } else {
        for (; word <= ((a + size - 1) & ~(uintptr_t)3); word += 4) {
            RaceCell* c = race_cell(word, &space, &byte);
            if (c && race_spend()) read_word(c, byte_mask(word, a, size), space, byte + (word < a ? a - word : 0), pc);
        }
    }
    if (state_bytes(a)) state_check_read(a, size);
}

// A plain write, before it happens: its old bytes are kept and it is settled at the thread's next
// access or stop, once the store has happened. Writes wider than the buffer count as changing.
static inline __attribute__((always_inline)) void race_write(uintptr_t a, unsigned long size, void* pc) {
    const bool state = state_bytes(a);
    if (g_race_asleep) {   // the state check still learns what each launch wrote
        if (state) state_note_write(a, size);
        return;
    }
    if (g_pending.addr) race_settle();
    if (state) state_note_write(a, size);
    int space; size_t byte;
    uintptr_t word = a & ~(uintptr_t)3;
    if ((a & 3) + size <= 4) {   // within one word: the common case
        RaceCell* c = race_cell(word, &space, &byte);
        if (!c || !race_spend()) return;
        g_pending.addr = a;
        g_pending.pc = pc;
        g_pending.cell = c;
        g_pending.mask = byte_mask(word, a, size);
        g_pending.space = space;
        g_pending.at = byte + (a - word);
        memcpy(&g_pending.word, (const void*)word, 4);
        return;
    }
    uintptr_t last = (a + size - 1) & ~(uintptr_t)3;
    if (!race_cell(word, &space, &byte) && !race_cell(last, &space, &byte)) return;
    if (!race_spend()) return;
    if (size > sizeof g_pending.old) {
        settle_write(a, (unsigned)size, 1, pc);
        return;
    }
    g_pending.addr = a;
    g_pending.size = (unsigned)size;
    g_pending.pc = pc;
    g_pending.cell = nullptr;
    memcpy(g_pending.old, (const void*)a, size);
}

// A thread that polls one address and keeps seeing the same value waits for a write that no running
// thread can make (threads switch only at barriers and collectives, blocks run one at a time).
static void spin_check(uintptr_t a, unsigned size) {
    unsigned long long value = 0;
    memcpy(&value, (const void*)a, size < 8 ? size : 8);
    if (a == g_spin_addr && value == g_spin_value) {
        if (++g_spin_count >= SPIN_LIMIT) {
            Line l;
            l.s("result ").i(g_case).s(" sync_error spin ");
            if (a - (uintptr_t)g_mem < g_mem_bytes) l.s("offset ").u(a - (uintptr_t)g_mem);
            else l.s("elsewhere 0");
            l.s(" count ").u(g_spin_count).s(" where launch ").i(g_launch).s(" block (").u(g_ctx->block_idx.x)
                .s(",").u(g_ctx->block_idx.y).s(",").u(g_ctx->block_idx.z).s(") thread (");
            describe_linear(l, g_race_tid).s(")");
            l.emit();
            sys_exit(4);
        }
    } else {
        g_spin_addr = a;
        g_spin_value = value;
        g_spin_count = 0;
    }
}

// An atomic or volatile access: never a conflict; an acquire, a release after a fence; a poll.
static void race_strong(uintptr_t a, unsigned size, int writes) {
    if (g_pending.addr) race_settle();
    if (g_race_asleep) {
        if (writes && state_bytes(a)) state_note_write(a, size);
        spin_check(a, size);
        return;
    }
    g_thread_acq[g_race_tid] = g_ev;
    g_block_acq_pending = 1;
    if (writes && g_thread_fence[g_race_tid] >= g_block_ev) {
        if (g_nreleases && g_releases[g_nreleases - 1].start_ev == g_block_ev) {
            Release& r = g_releases[g_nreleases - 1];
            if (g_barrier_ev > r.barrier_ev) r.barrier_ev = g_barrier_ev;
            r.tid = g_race_tid & 1023;
            r.ev = g_ev;
        } else if (g_nreleases < RELEASE_CAPACITY) {
            g_releases[g_nreleases++] = Release{g_block_ev, 0xffffffffu, g_barrier_ev, g_ev, g_race_tid & 1023};
        } else {
            g_release_overflow = 1;
        }
    }
    if (g_data_bytes) {
        state_check_read(a, size);
        if (writes) state_note_write(a, size);
    }
    spin_check(a, size);
}

// Whether an access needs nothing from the checks: they sleep (a write still notes the object's
// data it touches), or it is a read or write of an input's pages (nothing can race with it, and it is
// not the object's data) with no write pending. Most accesses are one of these; testing for them in
// the entry point itself, with the full check out of line, spares them its register saves (which cost
// more than the test did: an instrumented read took about twice as long).
static inline __attribute__((always_inline)) bool race_access_idle(uintptr_t a, unsigned long size, int writes) {
    if (g_race_asleep) return !writes || !state_bytes(a);
    if (g_pending.addr) return false;
    uintptr_t off = a - (uintptr_t)g_mem;
    if (off >= g_mem_bytes || size - 1 >= g_mem_bytes - off) return false;   // (an empty range too)
    return !g_gshadow || (!g_page_writable[off >> 12] && !g_page_writable[(off + size - 1) >> 12]);
}
__attribute__((noinline)) static void race_read_checked(uintptr_t a, unsigned size, void* pc) {
    race_read(a, size, pc);
}
__attribute__((noinline)) static void race_write_checked(uintptr_t a, unsigned long size, void* pc) {
    race_write(a, size, pc);
}

// ------------------------------------------------------------------ the instrumentation's entry points
#define MG_TSAN extern "C" __attribute__((visibility("default")))
#define MG_PC __builtin_return_address(0)
#define MG_READ(a, n) \
    if (!race_access_idle((uintptr_t)(a), n, 0)) race_read_checked((uintptr_t)(a), n, MG_PC)
#define MG_WRITE(a, n) \
    if (!race_access_idle((uintptr_t)(a), n, 1)) race_write_checked((uintptr_t)(a), n, MG_PC)
MG_TSAN void __tsan_init(void) {}
MG_TSAN void __tsan_func_entry(void*) {}
MG_TSAN void __tsan_func_exit(void) {}
MG_TSAN void __tsan_vptr_update(void**, void*) {}
MG_TSAN void __tsan_vptr_read(void**) {}
#define MG_TSAN_SIZED(n)                                                                             \
    MG_TSAN void __tsan_read##n(void* a) { MG_READ(a, n); }                                        \
    MG_TSAN void __tsan_write##n(void* a) { MG_WRITE(a, n); }                                      \
    MG_TSAN void __tsan_unaligned_read##n(void* a) { MG_READ(a, n); }                              \
    MG_TSAN void __tsan_unaligned_write##n(void* a) { MG_WRITE(a, n); }                            \
    MG_TSAN void __tsan_volatile_read##n(void* a) { race_strong((uintptr_t)a, n, 0); }             \
    MG_TSAN void __tsan_volatile_write##n(void* a) { race_strong((uintptr_t)a, n, 1); }            \
    MG_TSAN void __tsan_unaligned_volatile_read##n(void* a) { race_strong((uintptr_t)a, n, 0); }   \
    MG_TSAN void __tsan_unaligned_volatile_write##n(void* a) { race_strong((uintptr_t)a, n, 1); }
MG_TSAN_SIZED(1)
MG_TSAN_SIZED(2)
MG_TSAN_SIZED(4)
MG_TSAN_SIZED(8)
MG_TSAN_SIZED(16)
#undef MG_TSAN_SIZED
MG_TSAN void __tsan_read_range(void* a, unsigned long size) {
    for (unsigned long done = 0; done < size; done += 16)
        race_read((uintptr_t)a + done, (unsigned)(size - done < 16 ? size - done : 16), MG_PC);
}
MG_TSAN void __tsan_write_range(void* a, unsigned long size) { MG_WRITE(a, size); }

// Called by the emulation header's atomics and fences (mg_atomic.h, mg_intrinsics.h).
MG_TSAN void __mg_race_atomic(const void* a, unsigned size) { race_strong((uintptr_t)a, size, 1); }
MG_TSAN void __mg_race_fence(void) {
    if (g_pending.addr) race_settle();
    g_thread_fence[g_race_tid] = g_ev;
}
#undef MG_WRITE
#undef MG_READ
#undef MG_PC
#undef MG_TSAN
