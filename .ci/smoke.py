"""The smoke test of an installation, run by `.ci/run` inside the fresh virtualenv it made.

It checks what a user's first minutes touch, in the installed package (not the checkout's
test suite): the interpreter is a virtualenv that sees no system site packages; a kernel compiles
through NVRTC (in its helper process, which must find the venv's libnvrtc) and runs on the CPU
emulator; `mutagym eval` pays a correct kernel 1.0 through the reward gate and withholds it from
a wrong one; one `env.step` of the Gymnasium environment judges a kernel. Exit status 0 when all
hold; otherwise the first failed check and its output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "substrates" / "relu" / "substrate.cu"
WRONG = ROOT / "benchmarks" / "probe" / "relu_vec4_partial_tail.cu"


def check(condition: bool, what: str, detail: str = "") -> None:
    if not condition:
        sys.exit(f"smoke: {what} failed\n{detail[-4000:]}")
    print(f"smoke: {what}: ok", flush=True)


def main() -> None:
    check(sys.prefix != sys.base_prefix, "running in a virtualenv", f"sys.prefix = {sys.prefix}")
    venv_config = (Path(sys.prefix) / "pyvenv.cfg").read_text()
    check("include-system-site-packages = false" in venv_config, "no system site packages", venv_config)
    check(all(p.startswith(sys.prefix) for p in sys.path if "site-packages" in p),
          "site-packages only from the venv", "\n".join(sys.path))

    import numpy as np
    from mutagym.runtime import compile
    from mutagym.runtime.nvrtc import nvrtc_compile

    source = CORRECT.read_text()
    check(".entry" in nvrtc_compile(source).ptx, "NVRTC compiles in its helper process")
    kernel = compile(source, backend="cpu")
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    result = kernel.run({"x": x}, {"out": ((1000,), "float32")}, {"n": 1000})
    check(result.outcome == "ok" and np.array_equal(result.outputs["out"], np.maximum(x, 0)),
          "the CPU emulator runs a kernel", repr(result))

    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        proc = subprocess.run([str(Path(sys.executable).parent / "mutagym"), "eval", "--problem", "relu",
                               str(CORRECT), str(WRONG), "--json"], cwd=work, capture_output=True, text=True,
                              timeout=900)
        seconds = time.perf_counter() - start
        rows = json.loads(proc.stdout) if proc.stdout.strip().startswith("[") else []
        rewards = [row.get("reward") for row in rows]
        check(rewards == [1.0, 0.0] and all(row["checker"].startswith("gate-") for row in rows),
              f"`mutagym eval` through the reward gate pays the correct kernel 1.0 and the wrong one 0.0 "
              f"({seconds:.1f} s for both)", proc.stdout + proc.stderr)

    import gymnasium as gym
    import mutagym  # noqa: F401 - registers the environments
    env = gym.make("mutagym/KernelTask-v0", problems="relu")   # defaults: the gate, Ray prescreen
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(source)
    env.close()
    check(reward == 1.0 and terminated and info["category"] == "correct", "one env.step", repr(info))


if __name__ == "__main__":
    main()
