// Checks the runner's fiber switch without the sandbox, so it can run under qemu for other
// architectures: 64 threads cross 5 barriers and a shuffle reduction, keeping values in
// callee-saved integer and floating-point registers across every switch, and every fiber
// frame must be 16-byte aligned. Prints "ok" or the first failure and exits non-zero.
#define main mg_runner_main
#include "runner.cpp"
#undef main

static MgCtx check_ctx;
static int arrivals[64];
static double results[64];
static int misaligned;

__attribute__((noinline)) static void check_frame_alignment() {
    if ((uintptr_t)__builtin_frame_address(0) % 16) misaligned = 1;
}

static void entry(void**) {
    unsigned t = g_ctx->thread_idx.x;
    double d = t * 1.5;   // lives across calls: callee-saved registers must survive the switch
    long acc = t;
    check_frame_alignment();
    for (int round = 0; round < 5; round++) {
        arrivals[t] += 1;
        __mg_syncthreads(__LINE__, 1);
        for (unsigned k = 0; k < g_nthreads; k++)
            if (arrivals[k] != round + 1) { printf("barrier let thread %u through early\n", t); exit(1); }
        __mg_syncthreads(__LINE__, 2);
        d = d * 0.5 + round;
        acc = acc * 3 + round;
    }
    unsigned long long bits = (unsigned long long)t;
    for (int offset = 16; offset > 0; offset >>= 1)
        bits += __mg_warp_op(__LINE__, 0xffffffffu, 3 /* shfl_down */, bits, offset, 32);
    results[t] = d + (double)acc + (t % 32 == 0 ? (double)bits : 0.0);
}

int main() {
    g_ctx = &check_ctx;
    g_fiber_mode = 1;
    g_stack_bytes = 64 * 1024;
    g_max_threads = 64;
    allocate_fibers();
    race_allocate(g_max_threads, nullptr, 0);   // the race checks' per-thread state (no shadow)
    g_order = (unsigned*)calloc(g_max_threads, sizeof(unsigned));
    Launch launch;
    memset(&launch, 0, sizeof launch);
    launch.entry[CHECKED] = entry;
    launch.grid = {1, 1, 1};
    launch.block = {64, 1, 1};
    for (g_schedule = 0; g_schedule < 3; g_schedule++) {
        memset(arrivals, 0, sizeof arrivals);
        if (run_launch(0, &launch)) { printf("sync error: %s\n", g_sync_message.buf); return 1; }
        for (unsigned t = 0; t < 64; t++) {
            double d = t * 1.5;
            long acc = t;
            for (int round = 0; round < 5; round++) { d = d * 0.5 + round; acc = acc * 3 + round; }
            unsigned base = t / 32 * 32;
            double warp_sum = 0;
            for (unsigned k = base; k < base + 32; k++) warp_sum += k;
            double expected = d + (double)acc + (t % 32 == 0 ? warp_sum : 0.0);
            if (results[t] != expected) { printf("thread %u: %f != %f\n", t, results[t], expected); return 1; }
        }
    }
    if (misaligned) { printf("a fiber frame was not 16-byte aligned\n"); return 1; }
    printf("ok\n");
    return 0;
}
