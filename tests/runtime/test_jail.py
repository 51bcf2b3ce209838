"""Nothing of a submission runs outside the jail: the runner closes it before loading the object.

The object check refuses initialisers and foreign symbols, and the static checks refuse the
attributes that make them; these tests go past both, building hostile objects by hand, to show
that the runner holds on its own. Code that runs inside dlopen (an ifunc resolver, a constructor)
runs unprivileged, under no_new_privs and a seccomp filter that allows only what loading needs;
no exit path runs the object's destructors; the kernels run under a filter as tight as strict
mode; and the address space is limited, so that an object too large to load is the kernel's
`crash`, not an infrastructure error.
"""

from __future__ import annotations

import os
import platform
import subprocess
import threading
import time

import numpy as np
import pytest

import mutagym.runtime.cpu_backend as cpu_backend
from mutagym.runtime import RunCase, compile
from mutagym.runtime.cpu_backend import CpuKernel
from mutagym.runtime.kernel import Kernel
from mutagym.runtime.results import RunResult
from mutagym.runtime.submission import parse_submission
from mutagym.runtime.toolchain import build_kernel
from mutagym.runtime.translate import translation_unit
from submission_text import compiled, launch, submission

N = 64
X = np.arange(N, dtype=np.float32)
CASE = RunCase({"x": X}, {"out": ((N,), "float32")}, {"n": N})
KERNEL = 'extern "C" __global__ void k(const float* x, float* out, int n) {\n    int i = threadIdx.x;\n    %s\n}\n'
COPY = submission(KERNEL % "if (i < n) out[i] = x[i];", launch("k", [1], ["n"], ["x", "out", "n"]))
GENERATED = '\n#line 1 "mutagym-generated"\n'
# Hand-written declarations: the kernel's object is linked without libc, and ld.so binds these
# to the runner's libc when it loads the object.
LIBC = 'extern "C" int open(const char*, int, ...);\nextern "C" long syscall(long, ...);\n' \
       'extern "C" long write(int, const void*, unsigned long);\n'
O_WRONLY_CREAT = 0o101
SYS_EXIT = 60 if platform.machine() == "x86_64" else 93
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the identity is dropped only when started as root")


def hostile(text: str, code: str, *, entries: bool = True) -> Kernel:
    """A kernel for the launch plan of *text* whose object is built from *code* (C++ defining the
    same kernels) and the runner interface mutagym generates for *text*, past every object check;
    without its entry shims when not *entries*."""
    sub = parse_submission(text)
    clean = CpuKernel(sub)   # the attributes __init__ sets, whatever they are
    impl = CpuKernel.__new__(CpuKernel)
    impl.__dict__.update(vars(clean))
    tail = translation_unit(sub).split(GENERATED, 1)[1]
    if not entries:
        tail = "\n".join(line for line in tail.splitlines() if "__mg_entry_" not in line)
    impl.object_path = build_kernel(f"{LIBC}{code}{GENERATED}{tail}")
    return Kernel(sub, "cpu", impl)


def raw_runs(monkeypatch) -> list[subprocess.CompletedProcess]:
    """Make each batch run the runner on its real request and keep what it did (exit status and
    the whole of stdout, lines the parent would not read included); every case is then a crash."""
    runs = []

    def run_child(self, request, pass_fds, memory, start, results, printed, timeout_s):
        proc = cpu_backend.start_runner(self.runner, pass_fds, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate(request.encode(), timeout=60)
        runs.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
        for case in range(start, len(results)):
            results[case] = RunResult("crash", message="run by the test")

    monkeypatch.setattr(CpuKernel, "_run_child", run_child)
    return runs


def still_fine():
    """The parent is the same process and a normal kernel still runs and gives the right output."""
    pid = os.getpid()
    r = compiled(COPY).run_batch([CASE])[0]
    assert r.ok, r.message
    np.testing.assert_array_equal(r.outputs["out"], X)
    assert os.getpid() == pid


class TestLoadTimeCode:
    def test_ifunc_resolver_cannot_write_a_file(self, tmp_path):
        """An ifunc resolver runs inside dlopen: its open(O_CREAT|O_WRONLY) is killed by the loading
        filter, the file never appears, and the run is a forbidden_syscall."""
        target = tmp_path / "resolver-was-here"
        code = f"""
            extern "C" void mg_impl(void) {{}}
            extern "C" __attribute__((used)) void (*mg_resolve(void))(void) {{
                open("{target}", {O_WRONLY_CREAT}, 0644);
                return mg_impl;
            }}
            extern "C" void mg_hook(void) __attribute__((ifunc("mg_resolve")));
            void (*volatile mg_keep)(void) = mg_hook;   // an IRELATIVE relocation: resolved at load
            {KERNEL % "if (i < n) out[i] = x[i];"}
        """
        r = hostile(COPY, code).run_batch([CASE])[0]
        assert r.outcome == "forbidden_syscall"
        assert "the sandbox killed the kernel for a forbidden system call" in r.message
        assert not target.exists()
        still_fine()

    @as_root
    @pytest.mark.parametrize("root", ["auto", "0"])
    def test_constructor_runs_without_roots_privileges(self, root, tmp_path, monkeypatch):
        """A load-time constructor opens a root-only file read-only (which the loading filter
        allows) and reports through its exit status: 78, the open failed; as root it would be 77.
        With the host's root too (`MUTAGYM_EMPTY_ROOT=0`), where the dropped identity alone stops it."""
        monkeypatch.setenv("MUTAGYM_EMPTY_ROOT", root)
        secret = tmp_path / "secret"
        secret.write_text("root only\n")
        secret.chmod(0o600)
        code = f"""
            __attribute__((constructor)) static void mg_early(void) {{
                syscall({SYS_EXIT}, open("{secret}", 0) >= 0 ? 77 : 78);
            }}
            {KERNEL % "if (i < n) out[i] = x[i];"}
        """
        runs = raw_runs(monkeypatch)
        hostile(COPY, code).run_batch([CASE])
        assert runs[0].returncode == 78, runs[0]
        assert b"ready" not in runs[0].stdout


    def test_load_time_code_cannot_make_memory_executable(self):
        """The loading filter lets ld.so take permissions away, never grant execution: a resolver
        that would make its own page writable and executable is killed."""
        code = f"""
            extern "C" int mprotect(void*, unsigned long, int);
            extern "C" void mg_impl(void) {{}}
            extern "C" __attribute__((used)) void (*mg_resolve(void))(void) {{
                unsigned long page = (unsigned long)(void*)mg_impl & ~4095UL;
                mprotect((void*)page, 4096, 7);   // PROT_READ | PROT_WRITE | PROT_EXEC
                return mg_impl;
            }}
            extern "C" void mg_hook(void) __attribute__((ifunc("mg_resolve")));
            void (*volatile mg_keep)(void) = mg_hook;
            {KERNEL % "if (i < n) out[i] = x[i];"}
        """
        r = hostile(COPY, code).run_batch([CASE])[0]
        assert r.outcome == "forbidden_syscall", r.message
        still_fine()

    def test_load_time_code_that_never_ends_is_the_kernels_timeout(self):
        """A resolver that spins forever keeps the object from loading: the kernel's timeout (it
        is the submission's code that hangs), not an infrastructure error."""
        code = f"""
            extern "C" void mg_impl(void) {{}}
            extern "C" __attribute__((used)) void (*mg_resolve(void))(void) {{
                for (volatile unsigned long k = 0; ; k++) {{}}
                return mg_impl;
            }}
            extern "C" void mg_hook(void) __attribute__((ifunc("mg_resolve")));
            void (*volatile mg_keep)(void) = mg_hook;
            {KERNEL % "if (i < n) out[i] = x[i];"}
        """
        r = hostile(COPY, code).run_batch([CASE], timeout_s=1)[0]
        assert r.outcome == "timeout"
        assert "did not finish loading" in r.message
        still_fine()


class TestNoExitHandlers:
    DESTRUCTOR = """
        __attribute__((destructor)) static void mg_late(void) {{
            write(1, "FINI-RAN\\n", 9);
            open("{target}", {flags}, 0644);
        }}
    """

    def test_destructor_does_not_run_after_a_missing_entry(self, tmp_path, monkeypatch):
        """The runner stops at a launch whose entry the object lacks; that exit is a raw one, so the
        object's .fini_array never runs: nothing on stdout from it, no file."""
        target = tmp_path / "fini-was-here"
        code = self.DESTRUCTOR.format(target=target, flags=O_WRONLY_CREAT) + KERNEL % "if (i < n) out[i] = x[i];"
        runs = raw_runs(monkeypatch)
        hostile(COPY, code, entries=False).run_batch([CASE])
        assert b"fatal missing entry __mg_entry_k" in runs[0].stdout
        assert runs[0].returncode == 2
        assert b"FINI-RAN" not in runs[0].stdout
        assert not target.exists()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the payloads are x86-64 machine code")
class TestMachineCode:
    @pytest.mark.parametrize("name, payload", [
        ("getpid", "0xb8, 39, 0, 0, 0,  0x0f, 0x05,  0xc3"),                 # mov eax, 39; syscall; ret
        ("write to stderr", "0xb8, 1, 0, 0, 0,  0xbf, 2, 0, 0, 0,  0x48, 0x89, 0xe6,  0xba, 1, 0, 0, 0,  "
                            "0x0f, 0x05,  0xc3"),                            # write(2, rsp, 1); ret
    ])
    def test_code_in_an_executable_section_is_killed(self, name, payload):
        """Bytes placed in an executable section and called from the kernel make a system call
        directly: killed by the final filter (writing to stderr was allowed in strict mode)."""
        code = f"""
            __attribute__((section(".text.payload"), used)) const unsigned char mg_code[] = {{ {payload} }};
            {KERNEL % "if (i == 0) reinterpret_cast<void (*)(void)>((const void*)mg_code)();"
                      " if (i < n) out[i] = x[i];"}
        """
        r = hostile(COPY, code).run_batch([CASE])[0]
        assert r.outcome == "forbidden_syscall", (name, r)
        assert "the sandbox killed the kernel for a forbidden system call" in r.message
        assert r.outputs == {}
        still_fine()


class TestLimits:
    def test_object_larger_than_the_address_space_is_the_kernels_crash(self):
        """A 512 MiB zero-initialised global touched by the kernel: its object does not load within
        the address-space limit, and every case of the batch says so (no host path in the message)."""
        code = "__device__ float big[128 << 20];\n" + KERNEL % "big[i * 1000003] = x[i]; if (i < n) out[i] = big[i * 1000003];"
        results = hostile(COPY, code).run_batch([CASE, CASE])
        for r in results:
            assert r.outcome == "crash", r
            assert "the kernel's object could not be loaded within the sandbox's limits (" in r.message
            assert "MiB of address space)" in r.message
            assert "/" not in r.message
        still_fine()


class TestIdentity:
    def test_kernels_run_unprivileged_under_three_filters(self, monkeypatch):
        """While a kernel spins, the child's /proc status shows the dropped identity, no
        capabilities, no_new_privs and three seccomp filters (loading, mapped, final); afterwards a
        normal kernel still runs."""
        spin = submission(KERNEL % "volatile int forever = 1; while (forever) { } if (i < n) out[i] = x[i];",
                          launch("k", [1], ["n"], ["x", "out", "n"]))
        real_popen = subprocess.Popen
        seen = {}

        def watch(pid):
            status = ""
            for _ in range(2000):
                try:
                    with open(f"/proc/{pid}/status") as f:
                        status = f.read()
                except OSError:
                    break
                if "Seccomp_filters:\t3" in status or "State:\tZ" in status:
                    break
                time.sleep(0.002)
            seen["status"] = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)

        def popen(args, *a, **kw):
            proc = real_popen(args, *a, **kw)
            if str(args[0]).endswith("mg_runner"):   # not the compilers the checks start
                seen["watcher"] = threading.Thread(target=watch, args=(proc.pid,))
                seen["watcher"].start()
            return proc

        monkeypatch.setattr(cpu_backend.subprocess, "Popen", popen)
        r = compiled(spin).run_batch([CASE], timeout_s=2.0)[0]
        seen["watcher"].join()
        assert r.outcome == "timeout"
        status = {key: value.strip() for key, value in seen["status"].items()}
        assert status.get("Seccomp") == "2" and status.get("Seccomp_filters") == "3", status
        assert status["NoNewPrivs"] == "1"
        assert int(status["CapEff"], 16) == 0
        uids = status["Uid"].split()
        assert "0" not in uids
        if os.geteuid() == 0:
            assert uids == [str(cpu_backend.SANDBOX_UID)] * 4
            assert status["Gid"].split() == [str(cpu_backend.SANDBOX_GID)] * 4
            assert status["Groups"] == ""
        monkeypatch.undo()
        still_fine()

    @as_root
    def test_object_in_a_private_folder_still_loads(self, tmp_path):
        """The runner reads the object while still root and loads a copy: an object of mode 0600 in
        a folder of mode 0700 (as the compile cache is) loads although nobody could open it."""
        kernel = compile(COPY, backend="cpu")
        private = tmp_path / "private"
        private.mkdir(mode=0o700)
        obj = private / "kernel.so"
        obj.write_bytes(kernel._impl.object_path.read_bytes())
        obj.chmod(0o600)
        kernel._impl.object_path = obj
        r = kernel.run_batch([CASE])[0]
        assert r.ok, r.message
        np.testing.assert_array_equal(r.outputs["out"], X)


def test_a_kernel_whose_object_was_evicted_is_rebuilt():
    """The compile cache may evict a kernel's object while the kernel is held: the next run
    builds it again instead of failing to load it."""
    k = compile(COPY.replace("out[i] = x[i];", "out[i] = x[i] + 0.0f;"), backend="cpu")
    k._impl.object_path.unlink()
    r = k.run_batch([CASE])[0]
    assert r.ok and np.array_equal(r.outputs["out"], X)
