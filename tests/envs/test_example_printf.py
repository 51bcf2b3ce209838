"""Multi-turn feedback shows device printf from the public example input, never from hidden ones."""

from __future__ import annotations

import numpy as np

from mutagym.envs.example_printf import EXAMPLE, PRINTF_FEEDBACK_CHARS, example_printf
from mutagym.envs.kernel_task import KernelTaskEnv
from mutagym.rewards.generators import generate
from mutagym.substrates.catalog import load_problem

# A wrong ReLU (it adds 1) that prints its first input element and the size it was given.
PRINTING_RELU = """/* mutagym
[[launch]]
kernel = "relu"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]
*/
extern "C" __global__ void relu(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) printf("x[0]=%.9g n=%d\\n", x[0], n);
    if (i < n) out[i] = fmaxf(x[i], 0.0f) + 1.0f;
}
"""


def public_first_element() -> tuple[float, int]:
    problem = load_problem("relu")
    example = generate(problem, EXAMPLE["generator"], preset=EXAMPLE["preset"], seed=EXAMPLE["seed"])
    x = example.inputs["x"]
    return float(np.float32(x.ravel()[0])), x.size


def test_printf_comes_from_the_public_example():
    x0, n = public_first_element()
    assert example_printf(PRINTING_RELU, "relu", "cpu") == f"x[0]={x0:.9g} n={n}\n"


def test_a_kernel_without_printf_is_not_run_again():
    assert example_printf("not even a kernel", "relu", "cpu") == ""


def test_multi_turn_feedback_shows_only_the_public_output():
    x0, n = public_first_element()
    env = KernelTaskEnv("relu", checker="kernelbench", prescreen=False, max_turns=2)
    try:
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(PRINTING_RELU)
        assert info["category"] == "wrong" and reward == 0
        feedback = obs.split("## Feedback on submission 1 of 2", 1)[1]
        assert "Device printf on the public example input" in feedback
        assert feedback.count("x[0]=") == 1 and f"x[0]={x0:.9g} n={n}" in feedback
    finally:
        env.close()


def test_output_is_bounded():
    chatty = PRINTING_RELU.replace('if (i == 0) printf("x[0]=%.9g n=%d\\n", x[0], n);',
                                   'if (i < 64) printf("thread %04d says hello to everyone reading\\n", i);')
    assert len(example_printf(chatty, "relu", "cpu")) == PRINTF_FEEDBACK_CHARS
