"""Nothing of the host is in a kernel's reach: not the judge's environment, not its paths, not a file.

The runner starts with an empty environment, an argv of its bare name and no descriptor but its
pipes (the objects and the buffers come as descriptors, closed once mapped); its root is an empty
tmpfs holding the kernel's objects and nothing else where the machine allows the namespaces; and
from the moment the objects are mapped no filter allows an open, whatever the root. Each wall is
shown on its own: the stack walk needs no trick at all, the load-time code gets past the object
wall (built by hand, as in test_jail.py), the after-mapping test runs with the host's root too, and
a judge denied the namespaces (root without CAP_SYS_ADMIN, as in a container) falls back to the
host's root with a warning, or refuses to run where an empty root is required.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mutagym
from mutagym.runtime.toolchain import cache_dir
from submission_text import compiled, launch, submission
from test_jail import CASE, COPY, KERNEL, SYS_EXIT, as_root, hostile, raw_runs, still_fine

#: Set in the judge's environment for these tests: no output may ever carry it.
CANARY = "mutagym-canary-7f3a9c"
#: Host files a kernel must not read: the system's accounts and name, the product's own README.
HOST_FILES = ("/etc/passwd", "/etc/hostname", str(Path(mutagym.__file__).resolve().parents[1] / "README.md"))

#: A barrier-free kernel runs on the runner's own stack: thread 0 walks up from its frame to the top
#: of the stack (where argv, the environment and the auxiliary vector lie) and prints every string of
#: printable bytes it finds, until the first address past the top faults.
STACK_WALK = submission('''
extern "C" __global__ void k(const float* x, float* out, int n) {
    int i = threadIdx.x;
    if (i == 0) {
        volatile char here = 1;
        const volatile char* p = &here;
        long run = 0;
        for (long j = 0; ; j++) {
            char c = p[j];
            if (c >= 32 && c < 127) { run++; continue; }
            if (c == 0 && run >= 4) printf("%s\\n", (const char*)(p + j - run));
            run = 0;
        }
    }
    if (i < n) out[i] = x[i];
}
''', launch("k", [1], ["n"], ["x", "out", "n"]))


def host_data(text: str) -> list[str]:
    """What of the judge's host appears in *text*: the canary, its environment's values, its paths."""
    secrets = {CANARY, str(cache_dir()), os.getcwd(), os.environ.get("HOME", ""), os.environ.get("PATH", "")}
    return sorted(s for s in secrets if len(s) > 1 and s in text)


@pytest.fixture
def empty_root(monkeypatch):
    """Skip where this machine gives the runner no empty root (no user or mount namespaces)."""
    monkeypatch.setenv("MUTAGYM_EMPTY_ROOT", "auto")
    runs = raw_runs(monkeypatch)
    compiled(COPY).run_batch([CASE])
    if not runs[0].stdout.startswith(b"loading empty-root"):
        pytest.skip("this machine refuses the runner the namespaces of an empty root")
    monkeypatch.undo()
    monkeypatch.setenv("MUTAGYM_EMPTY_ROOT", "auto")


class TestTheJudgesEnvironment:
    def test_a_stack_walk_finds_no_environment_and_no_path(self, monkeypatch):
        """A kernel that prints every string above its stack frame finds the runner's bare name,
        and nothing of the judge's environment (a canary set in it, HOME, PATH) or of its paths (the
        compile cache, the working folder): the runner's environment is empty, its argv a name."""
        monkeypatch.setenv("MUTAGYM_TEST_CANARY", CANARY)
        r = compiled(STACK_WALK).run_batch([CASE])[0]
        assert r.outcome == "memory_fault", r   # past the top of the stack
        assert "mg_runner" in r.stdout, r.stdout[:2000]   # the walk reached argv
        assert host_data(r.stdout + r.message) == []
        still_fine()


LOAD_TIME_OPEN = f"""
    extern "C" int open(const char*, int, ...);
    extern "C" void mg_impl(void) {{}}
    extern "C" __attribute__((used)) void (*mg_resolve(void))(void) {{
        const char* files[] = {{{", ".join(f'"{f}"' for f in HOST_FILES)}}};
        for (const char* f : files)
            if (open(f, 0) >= 0) syscall({SYS_EXIT}, 77);   // read-only: the loading filter allows it
        syscall({SYS_EXIT}, 78);
        return mg_impl;
    }}
    extern "C" void mg_hook(void) __attribute__((ifunc("mg_resolve")));
    void (*volatile mg_keep)(void) = mg_hook;   // an IRELATIVE relocation: resolved inside dlopen
    {KERNEL % "if (i < n) out[i] = x[i];"}
"""


class TestHostFiles:
    def test_load_time_code_finds_no_host_file(self, empty_root, monkeypatch):
        """Code that runs inside dlopen (an ifunc resolver, past the object wall) may open files
        read-only, and finds none of the host's (the system's accounts and name, the product's
        README): the root is empty. It says so through its exit status, 78 (77 had one opened)."""
        assert all(Path(f).exists() for f in HOST_FILES)
        runs = raw_runs(monkeypatch)
        hostile(COPY, LOAD_TIME_OPEN).run_batch([CASE])
        assert runs[0].returncode == 78, runs[0]
        assert b"ready" not in runs[0].stdout

    @pytest.mark.parametrize("root", ["auto", "0"])
    def test_no_open_once_the_objects_are_mapped(self, root, monkeypatch):
        """An entry resolved through an ifunc runs its resolver when the runner looks the entry up,
        after the objects are mapped: its open of a host file is killed, with the empty root and
        with the host's (`MUTAGYM_EMPTY_ROOT=0`), and every case of the batch says so."""
        monkeypatch.setenv("MUTAGYM_EMPTY_ROOT", root)
        code = f"""
            extern "C" int open(const char*, int, ...);
            {KERNEL % "if (i < n) out[i] = x[i];"}
            extern "C" void mg_entry(void** a) {{ k(*(const float**)a[0], *(float**)a[1], *(int*)a[2]); }}
            extern "C" __attribute__((used)) void (*mg_resolve_entry(void))(void**) {{
                open("{HOST_FILES[0]}", 0);
                return mg_entry;
            }}
            extern "C" __attribute__((visibility("default"))) void __mg_entry_k(void**)
                __attribute__((ifunc("mg_resolve_entry")));
        """
        results = hostile(COPY, code, entries=False).run_batch([CASE, CASE])
        assert [r.outcome for r in results] == ["forbidden_syscall"] * 2, results
        still_fine()


class TestDescriptors:
    def test_the_kernel_reads_no_descriptor_but_its_empty_stdin(self):
        """Of descriptors 0 to 63, a kernel can read only its standard input, at its end: the
        buffers' memfd and the objects are closed once mapped, nothing else is inherited."""
        code = """
            extern "C" long read(int, void*, unsigned long);
        """ + KERNEL % ("if (i < 64) { char c; out[i] = (float)read(i, &c, 1); }")
        text = submission(KERNEL % "if (i < n) out[i] = x[i];", launch("k", [1], ["n"], ["x", "out", "n"]))
        r = hostile(text, code).run_batch([CASE])[0]
        assert r.ok, r.message
        readable = [fd for fd in range(64) if r.outputs["out"][fd] >= 0]
        assert readable == [0] and r.outputs["out"][0] == 0, r.outputs["out"]


#: Run in a child whose bounding set lacks CAP_SYS_ADMIN (a judge running as root in a container):
#: prints the outcome, or the error, and the warnings.
WITHOUT_SYS_ADMIN = """
import warnings
from test_jail import CASE, COPY
from submission_text import compiled
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        print(compiled(COPY).run_batch([CASE])[0].outcome)
    except Exception as err:
        print(type(err).__name__, err)
print([str(w.message) for w in caught])
"""


@as_root
@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs util-linux's setpriv")
class TestWithoutNamespaces:
    def without_sys_admin(self, root: str) -> str:
        env = {**os.environ, "MUTAGYM_EMPTY_ROOT": root}   # in this folder, the child imports test_jail
        return subprocess.run(["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", sys.executable,
                               "-c", WITHOUT_SYS_ADMIN], env=env, capture_output=True, text=True, timeout=300,
                              cwd=Path(__file__).parent).stdout

    def test_the_runner_falls_back_to_the_hosts_root_and_says_so(self):
        """Root without CAP_SYS_ADMIN gets no mount namespace: the kernel still runs, on the host's
        root (loading sees it; nothing opens once the objects are mapped), and the judge warns."""
        out = self.without_sys_admin("auto")
        assert out.startswith("ok\n"), out
        assert "could not empty its root" in out

    def test_an_empty_root_can_be_required(self):
        """With MUTAGYM_EMPTY_ROOT=1 the same judge refuses to run kernels: mutagym's own failure."""
        out = self.without_sys_admin("1")
        assert out.startswith("InfrastructureError the kernel runner failed: fatal an empty root is required"), out
