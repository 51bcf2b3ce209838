"""The Gymnasium environment on the real runtime and a real local Ray cluster."""

import functools
import os
import random
import signal
import string
import threading
import time

import gymnasium as gym
import psutil
import pytest
from gymnasium.utils.env_checker import check_env

import mutagym  # noqa: F401 - registers the environments
from mutagym.envs.judge import MAX_SOURCE_CHARS, Judge, RewardShaping
from mutagym.envs.kernel_task import KernelTaskEnv, feedback, select_problems
from mutagym.substrates.catalog import load_problem
from testkit import substrate_with

RELU = load_problem("relu").kernel_sources()["substrate"]
# A ReLU that returns its input: on KernelBench's inputs in [0, 1) it is indistinguishable.
RELU_IDENTITY = substrate_with("relu", "return fmaxf(v, 0.0f);", "return v;")
LAYERNORM = load_problem("layernorm").kernel_sources()["substrate"]


@pytest.fixture(scope="module")
def kernelbench_judge():
    judge = Judge("kernelbench", backend="cpu", num_cpus=2, workers=2)
    yield judge
    judge.close()


@pytest.mark.parametrize("env_id", ["mutagym/KernelTask-v0", "mutagym/KernelTaskMultiTurn-v0"])
def test_check_env_passes(env_id):
    env = gym.make(env_id, problems="relu,layernorm", checker="kernelbench", backend="cpu", prescreen=False)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_reset_is_reproducible_and_takes_a_problem():
    env = KernelTaskEnv(problems="relu,softmax,layernorm", checker="kernelbench", prescreen=False, backend="cpu")
    drawn = [env.reset(seed=s)[1]["problem"] for s in range(6)]
    assert drawn == [env.reset(seed=s)[1]["problem"] for s in range(6)]
    obs, info = env.reset(seed=1, options={"problem": "layernorm"})
    assert info["problem"] == "layernorm" and "LayerNorm" in obs and env.observation_space.contains(obs)
    with pytest.raises(ValueError, match="not one of this env's problems"):
        env.reset(options={"problem": "matmul"})
    with pytest.raises(ValueError, match="unknown option"):
        env.reset(options={"problm": "relu"})
    with pytest.raises(ValueError, match="matches no problem"):
        select_problems("no_such_problem*")
    env.close()


def test_correct_layernorm_earns_full_reward_and_passes_the_prescreen(kernelbench_judge):
    env = KernelTaskEnv(problems=["layernorm"], judge=kernelbench_judge)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(LAYERNORM)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["verdict"] == "accept" and info["category"] == "correct" and not info["infra_error"]
    pre = info["prescreen"]
    assert pre["status"] == "ok" and pre["pool_size"] > 20 and pre["pool_failures"] == 0
    assert pre["pool_accepted"] is True and pre["false_accept"] is False and pre["false_reject"] is False
    assert info["checker"] == kernelbench_judge.checker_id and len(info["inputs"]) == 5


def test_mutant_accepted_by_kernelbench_is_a_false_accept(kernelbench_judge):
    env = KernelTaskEnv(problems=["relu"], judge=kernelbench_judge)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(RELU_IDENTITY)
    assert reward == 1.0 and info["accepted"]          # the checker is fooled ...
    pre = info["prescreen"]
    assert pre["pool_accepted"] is False and pre["pool_failures"] > 0
    assert pre["false_accept"] is True and pre["false_reject"] is False    # ... and the prescreen says so
    totals = env.leakage[kernelbench_judge.checker_id]
    assert totals["false_accepts"] >= 1 and totals["leaked_reward"] >= 1.0


@pytest.mark.parametrize("action", ["", "".join(random.Random(0).choice(string.printable) for _ in range(5000)),
                                    "x" * (1 << 20)], ids=["empty", "random-printable", "one-megabyte"])
def test_garbage_gets_the_source_error_reward_and_a_clear_message(action):
    shaping = RewardShaping(source_error=-1.0, compile_error=-0.5, runtime_fault=-0.25, wrong=0.0)
    env = KernelTaskEnv(problems=["relu"], checker="kernelbench", prescreen=False, backend="cpu", shaping=shaping)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(action)
    assert reward == -1.0 and terminated and info["category"] == "source_error"
    assert any(word in info["message"] for word in ("empty", "mutagym", "characters")), info["message"]
    env.close()


def test_compile_error_gives_the_compile_log():
    env = KernelTaskEnv(problems=["relu"], checker="kernelbench", prescreen=False, backend="cpu",
                        shaping={"compile_error": -0.5}, max_turns=2)
    env.reset(seed=0)
    broken = substrate_with("relu", "return fmaxf(v, 0.0f);", "return fmaxf(v, 0.0f)")
    obs, reward, terminated, truncated, info = env.step(broken)
    assert reward == -0.5 and info["category"] == "compile_error" and not terminated and not truncated
    assert "Compilation failed" in obs and 'expected a ";"' in obs and "line 15" in obs
    env.close()


def test_multi_turn_feedback_never_shows_hidden_inputs():
    env = KernelTaskEnv(problems=["relu"], checker="kernelbench-verified", prescreen=False, backend="cpu",
                        max_turns=2)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(RELU_IDENTITY)
    assert reward == 0.0 and not terminated and not truncated and info["turn"] == 1
    assert "Feedback on submission 1 of 2" in obs and "hidden inputs failed" in obs
    for hidden in ("negated", "scaled", "uniform01", "relu:"):
        assert hidden not in obs
    obs, reward, terminated, truncated, info = env.step(RELU)
    assert reward == 1.0 and terminated and not truncated and "Accepted" in obs
    with pytest.raises(RuntimeError, match="episode ended"):
        env.step(RELU)
    env.reset(seed=0)
    env.step(RELU_IDENTITY)
    _, _, terminated, truncated, _ = env.step(RELU_IDENTITY)
    assert (terminated, truncated) == (False, True)      # out of turns
    env.close()


def test_fresh_seeds_redraw_the_suite_and_stay_fair():
    judge = Judge("kernelbench-verified", backend="cpu", prescreen=False, fresh_seeds=True, secret=11)
    first = judge.fresh.draw(judge.checker, "relu")
    second = judge.fresh.draw(judge.checker, "relu")
    assert [r.generator for r in first] == [r.generator for r in judge.checker.inputs_for("relu")]
    assert {r.seed for r in first}.isdisjoint({r.seed for r in second})
    again = Judge("kernelbench-verified", backend="cpu", prescreen=False, fresh_seeds=True, secret=11)
    assert again.fresh.draw(again.checker, "relu") == first          # same secret, same draws
    j = judge.judge(RELU, "relu")
    assert j.reward == 1.0                                           # gated: a correct kernel passes
    fixed = len(judge.checker.inputs_for("relu"))
    assert len(j.inputs) == 2 * fixed      # the fixed inputs stay beside their redraws (witnesses kept)
    wrong = judge.judge(RELU_IDENTITY, "relu")
    assert not wrong.accepted and all(str(r.seed) not in wrong.message for r in first + second)


def test_vector_envs_run_episodes():
    """AsyncVectorEnv needs `shared_memory=False` (Gymnasium's shared memory does not carry text)
    and, in a process already running Ray, `context="spawn"` (a forked Ray client hangs)."""
    make = functools.partial(KernelTaskEnv, problems=["relu"], checker="kernelbench", prescreen=False,
                             backend="cpu")
    for vec in (gym.vector.SyncVectorEnv([make, make]),
                gym.vector.AsyncVectorEnv([make, make], shared_memory=False, context="spawn")):
        obs, _ = vec.reset(seed=3)
        assert len(obs) == 2 and all("ReLU" in o for o in obs)
        _, rewards, terminated, truncated, infos = vec.step((RELU, RELU_IDENTITY))
        assert rewards.tolist() == [1.0, 1.0] and terminated.all() and not truncated.any()
        vec.close()


def test_killing_a_prescreen_actor_during_a_step_still_returns_a_result(kernelbench_judge):
    env = KernelTaskEnv(problems=["layernorm"], judge=kernelbench_judge)
    env.reset(seed=0)
    pids = kernelbench_judge.workers.actor_pids()
    changed = LAYERNORM + "\n__device__ int killed_actor_test;\n"   # new tokens: nothing cached for it
    result = {}
    step = threading.Thread(target=lambda: result.update(out=env.step(changed)))
    step.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(psutil.Process(p).children() for p in pids):
        time.sleep(0.02)                                  # an actor is running the kernel now
    busy = [p for p in pids if psutil.Process(p).children()]
    assert busy, "no prescreen actor started a kernel run"
    os.kill(busy[0], signal.SIGKILL)
    step.join(timeout=300)
    _, reward, _, _, info = result["out"]
    assert reward == 1.0 and info["prescreen"]["status"] == "ok"
    assert info["prescreen"]["pool_accepted"] is True
    assert busy[0] not in kernelbench_judge.workers.actor_pids()     # Ray restarted it


def test_feedback_text_for_faults_names_the_outcome():
    from mutagym.envs.judge import Judgement
    j = Judgement(0.0, False, "memory_fault", "runtime_fault", "c", "relu", "input #0 (official shape): "
                  "memory_fault: write past out", inputs=({"index": 0, "preset": "official", "passed": False,
                                                           "outcome": "memory_fault", "max_abs": None,
                                                           "max_rel": None, "mismatch_ratio": None},))
    text = feedback(j)
    assert "memory_fault" in text and "input 0 (official shape)" in text


def test_source_limit_is_the_action_space_limit():
    env = KernelTaskEnv(problems=["relu"], checker="kernelbench", prescreen=False, backend="cpu")
    assert env.action_space.max_length == MAX_SOURCE_CHARS
    assert env.action_space.contains(RELU) and not env.action_space.contains("\x00")
    env.close()


def test_import_mutagym_registers_both_ids_and_exports_the_api():
    import mutagym.envs.trainer as trainer
    assert {"mutagym/KernelTask-v0", "mutagym/KernelTaskMultiTurn-v0"} <= set(gym.registry)
    assert gym.spec("mutagym/KernelTaskMultiTurn-v0").kwargs["max_turns"] == 4
    assert mutagym.trl_reward is trainer.trl_reward and mutagym.KernelTaskEnv is KernelTaskEnv
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mutagym.nope
