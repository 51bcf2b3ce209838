"""The runner's fiber switch, checked without the sandbox on every architecture we can run.

`fibers/switch_check.cpp` includes runner.cpp and drives 64 fibers through barriers and a warp
shuffle, checking that callee-saved registers survive each switch and that every fiber frame is
16-byte aligned. It runs natively (the x86-64 or aarch64 assembly switch, and the ucontext
fallback) and, where a cross compiler and qemu are installed, for aarch64 under emulation.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from mutagym.runtime.toolchain import CSRC, compiler

CHECK = Path(__file__).with_name("fibers") / "switch_check.cpp"
FLAGS = ["-std=gnu++17", "-O2", "-fno-omit-frame-pointer", "-w", f"-I{CSRC}"]


def build_and_run(cxx: str, out: Path, *extra: str, runner: tuple[str, ...] = ()) -> str:
    subprocess.run([cxx, *FLAGS, *extra, "-o", str(out), str(CHECK), "-ldl"], check=True)
    return subprocess.run([*runner, str(out)], capture_output=True, text=True, timeout=120).stdout


@pytest.mark.parametrize("variant", [[], ["-DMG_UCONTEXT"]], ids=["assembly", "ucontext"])
def test_native_switch(variant, tmp_path):
    assert build_and_run(compiler(), tmp_path / "check", *variant).strip() == "ok"


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-g++") and shutil.which("qemu-aarch64")),
                    reason="needs g++-aarch64-linux-gnu and qemu-user (apt-get install)")
def test_aarch64_switch_under_qemu(tmp_path):
    out = build_and_run("aarch64-linux-gnu-g++", tmp_path / "check", "-static", runner=("qemu-aarch64",))
    assert out.strip() == "ok"
