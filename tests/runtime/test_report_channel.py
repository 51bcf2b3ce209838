"""The kernel cannot speak for the runner: a line it forges on the runner's stdout is its own crash.

Kernel code shares the runner's address space and reaches `write` and `syscall` through the
runner's symbols (built by hand past the object wall, as in test_jail.py). The judge believes a
line only where the runner could have written it (runtime/runner_reports.py): a forged report is
the kernel's `crash` on the cases of that runner, never a hang, never an `infra_error`, never a
message carrying the kernel's text; a line of the runner's own grammar for the case it is in is
believed, which costs the kernel that case. Each test finishes within its pytest timeout.
"""

from __future__ import annotations

import numpy as np
import pytest

from mutagym.runtime import LaunchError, RunCase
from submission_text import compiled, launch, submission
from test_jail import CASE, COPY, KERNEL, N, SYS_EXIT, X, hostile, still_fine

#: In the test's forged lines: it must reach no message.
MARK = "forged-by-the-kernel-41d2"
BREACH = "the kernel wrote to the runner's report channel"


def forging(say: str, then: str = "") -> str:
    """Object code whose thread 0 writes *say* to stdout, then runs *then* (C statements)."""
    return f"""
        static void mg_say(const char* s) {{ unsigned long n = 0; while (s[n]) n++; write(1, s, n); }}
        {KERNEL % ('if (i == 0) { mg_say("' + say + '"); ' + then + ' } if (i < n) out[i] = x[i];')}
    """


EXIT = f"syscall({SYS_EXIT}, 0);"
SYNC = "result 0 sync_error launch 0 block (0,0,0): deadlock: 1 threads wait at __syncthreads, 0 at warp " \
       "collectives, 0 have exited\\n"


@pytest.mark.timeout(120)
class TestForgedReports:
    def test_a_sync_error_for_case_0_then_an_exit_ends_the_batch(self):
        """Every case forges `result 0 sync_error` and exits: believed for case 0 (the runner's own
        grammar, for the case it is in: the kernel's loss), a breach for case 1 (the runner is on
        case 1), so case 1 and 2 are crashes. Before, the judge respawned runners for ever."""
        results = hostile(COPY, forging(SYNC, EXIT)).run_batch([CASE] * 3, timeout_s=5)
        assert [r.outcome for r in results] == ["sync_error", "crash", "crash"], results
        assert all(BREACH in r.message for r in results[1:])
        still_fine()

    @pytest.mark.parametrize("say, then", [
        ("result 999999 ok\\n", ""),                       # a case the batch does not have: was an IndexError
        (f"fatal {MARK}\\n", EXIT),                        # was an infra_error carrying the text
        (f"result 0 crash {MARK}\\n", ""),                 # a detail outside the grammar
        ("result 0 ok\\n", ""),                            # then the runner reports case 0 again
        ("result 1 ok\\n", EXIT),                          # a case the runner has not reached
        ("printf 0 999999999\\n", ""),                     # more printed text than a case may have
        ("ready\\n", ""),                                  # a line of another phase
        (f"{MARK} \\xff\\n", ""),                          # not the protocol at all
    ])
    def test_a_forged_line_is_the_kernels_crash(self, say, then):
        """A line the runner could not have written at that point makes every case of the runner a
        crash, with a message in the judge's words only."""
        results = hostile(COPY, forging(say, then)).run_batch([CASE] * 2, timeout_s=5)
        assert [r.outcome for r in results] == ["crash", "crash"], results
        for r in results:
            assert BREACH in r.message and MARK not in r.message + r.stdout, r
        still_fine()

    def test_a_line_without_end_is_the_kernels_crash(self):
        """A megabyte without a newline is not a line: the judge reads no more than one line's worth."""
        code = f"""
            static char mg_as[4096];
            {KERNEL % ('if (i == 0) { for (int k = 0; k < 4096; k++) mg_as[k] = 65; '
                       'for (int k = 0; k < 256; k++) write(1, mg_as, 4096); } if (i < n) out[i] = x[i];')}
        """
        r = hostile(COPY, code).run_batch([CASE], timeout_s=5)[0]
        assert r.outcome == "crash" and BREACH in r.message, r
        still_fine()

    def test_an_exit_without_a_result_is_the_kernels_crash(self):
        """The kernel ends its process cleanly in case 1 of 3: case 0 stands, case 1 is a crash (was
        an infra_error), and case 2 runs in the next runner."""
        code = f"""
            {KERNEL % f"if (i == 0 && x[1] == 2.0f) syscall({SYS_EXIT}, 0); if (i < n) out[i] = x[i];"}
        """
        marked = RunCase({"x": np.where(np.arange(N) == 1, 2.0, X).astype(np.float32)}, CASE.outputs, CASE.dims)
        results = hostile(COPY, code).run_batch([CASE, marked, CASE], timeout_s=5)
        assert [r.outcome for r in results] == ["ok", "crash", "ok"], results
        assert "exited (status 0) before it reported this case" in results[1].message
        still_fine()

    def test_load_time_code_that_closes_the_channel_and_spins_is_a_crash(self):
        """Code inside dlopen closes the runner's stdout (the loading filter allows close) and spins:
        the judge sees the end of the output, gives the process a few seconds to exit, kills it, and
        every case is a crash (before, the judge waited for the CPU limit: the timeout times the cases)."""
        code = f"""
            extern "C" int close(int);
            extern "C" void mg_impl(void) {{}}
            extern "C" __attribute__((used)) void (*mg_resolve(void))(void) {{
                close(1);
                for (volatile unsigned long k = 0; ; k++) {{}}
                return mg_impl;
            }}
            extern "C" void mg_hook(void) __attribute__((ifunc("mg_resolve")));
            void (*volatile mg_keep)(void) = mg_hook;
            {KERNEL % "if (i < n) out[i] = x[i];"}
        """
        results = hostile(COPY, code).run_batch([CASE] * 4, timeout_s=60)
        assert [r.outcome for r in results] == ["crash"] * 4, results
        assert "closed its report channel and did not exit" in results[0].message
        still_fine()

    def test_a_printed_line_stays_the_kernels_own(self):
        """The kernel prints a line that reads like the runner's protocol through printf: it arrives as
        its stdout, framed by the runner, and changes no outcome."""
        text = submission(KERNEL % 'if (i == 0) printf("result 0 sync_error %s\\n", "x"); if (i < n) out[i] = x[i];',
                          launch("k", [1], ["n"], ["x", "out", "n"]))
        r = compiled(text).run_batch([CASE])[0]
        assert r.ok and r.stdout == "result 0 sync_error x\n", r


def test_more_arguments_than_the_runner_passes_is_a_launch_error():
    """A launch with 65 arguments is the kernel's LaunchError before any runner starts (the runner
    would stop in its set-up: an infra_error)."""
    params = "float* out, " + ", ".join(f"int a{j}" for j in range(64))
    text = submission(f'extern "C" __global__ void k({params}) {{ out[threadIdx.x] = (float)a0; }}\n',
                      launch("k", [1], ["n"], ["out", *["n"] * 64]))
    with pytest.raises(LaunchError, match="passes 65 arguments; the emulator passes at most 64 to a kernel"):
        compiled(text).run_batch([RunCase({}, {"out": ((N,), "float32")}, {"n": N})])
