"""The reward gate, on the real runtime and a real local Ray cluster: wrong kernels the committed
checker alone pays for earn nothing, and correct kernels of every style earn the full reward.

Each wrong kernel here but one passes the hardened suite in ascending order (what the plain checker
runs), so the plain checker would pay it: the gate must catch it in a later stage or another thread
order, and say which, through `env.step`, `trl_reward` and `mutagym eval` alike. The one (a residue
no preset has, which the suite's shape-class input holds) and a refused launch plan are caught by
the suite itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import mutagym  # noqa: F401 - registers the environments
from mutagym.envs.judge import Judge
from mutagym.envs.kernel_task import KernelTaskEnv
from mutagym.rewards.checker import default_checker, evaluate_source
from mutagym.envs.trainer import TrlReward
from mutagym.substrates.catalog import list_problems, load_problem
from testkit import substrate_with

# ReLU whose tail after the float4 groups handles one leftover element: right for n % 4 in {0, 1}
# (the official and remainder shapes), wrong for the residues 2 and 3.
RELU_TAIL_OF_ONE = substrate_with(
    "relu", "    for (int i = (n4 << 2) + tid; i < n; i += stride) {\n        out[i] = relu_op(x[i]);\n    }",
    "    if (tid == 0 && (n & 3)) out[n - 1] = relu_op(x[n - 1]);")
# ReLU whose tail handles 1 or 3 leftover elements but not 2: wrong only for n % 4 == 2, a residue
# neither the suite nor the kill matrix's presets (n = 65,536, 50,021, 3) have.
RELU_TAIL_NOT_TWO = substrate_with(
    "relu", "    for (int i = (n4 << 2) + tid; i < n; i += stride) {\n        out[i] = relu_op(x[i]);\n    }",
    "    if (tid == 0 && (n & 3) != 2)\n        for (int i = n4 << 2; i < n; i++) out[i] = relu_op(x[i]);")
# The online softmax before the catalog fix: a masked (-inf) entry while the running max is still
# -inf adds expf(-inf - -inf) = NaN to the sum. Right on every finite input.
_ONLINE = load_problem("softmax").kernel_sources()["variant_online"]
_FIXED = ("} else if (m != -INFINITY) {  // a -inf (masked) entry while m is still -inf adds\n"
          "            d += expf(v - m);          // nothing: expf(-inf - -inf) would be NaN")
assert _FIXED in _ONLINE
SOFTMAX_MASK_UNSAFE = _ONLINE.replace(_FIXED, "} else {\n            d += expf(v - m);")
# A grid of n / 65536 blocks: no block at all below 65,536 elements (the pool of record has such
# sizes; the committed suite does not).
RELU_EMPTY_GRID = substrate_with("relu", 'grid = ["min(ceil_div(n, 1024), 1024)"]', 'grid = ["n // 65536"]')
# The last thread sums the block's partials without a barrier: right only when every other thread
# ran before it, as in ascending order.
SUM_WITHOUT_BARRIER = """/* mutagym
[[launch]]
kernel = "sum_rows"
grid = ["rows"]
block = [256]
args = ["x", "out", "rows", "cols"]
*/
extern "C" __global__ void sum_rows(const float* x, float* out, int rows, int cols) {
    __shared__ float partial[256];
    const int row = blockIdx.x, tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = tid; i < cols; i += 256) acc += x[(size_t)row * cols + i];
    partial[tid] = acc;
    if (tid == 255) {
        float s = 0.0f;
        for (int i = 0; i < 256; i++) s += partial[i];
        out[row] = s;
    }
}
"""

# Correct kernels in other styles than the substrates.
SUM_SPLIT_K_ATOMICS = """/* mutagym
[[launch]]
kernel = "zero"
grid = ["ceil_div(rows, 256)"]
block = [256]
args = ["out", "rows"]

[[launch]]
kernel = "sum_split"
grid = ["rows", 4]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
extern "C" __global__ void zero(float* out, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) out[r] = 0.0f;
}
extern "C" __global__ void sum_split(const float* x, float* out, int rows, int cols) {
    __shared__ float partial[128];
    const int row = blockIdx.x, part = blockIdx.y, tid = threadIdx.x;
    const int begin = (int)((long)cols * part / 4), end = (int)((long)cols * (part + 1) / 4);
    float acc = 0.0f;
    for (int i = begin + tid; i < end; i += 128) acc += x[(size_t)row * cols + i];
    partial[tid] = acc;
    __syncthreads();
    for (int s = 64; s > 0; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(&out[row], partial[0]);
}
"""
SUM_LAST_BLOCK_FINISHES = """/* mutagym
[[launch]]
kernel = "sum_ticket"
grid = ["rows", 8]
block = [64]
args = ["x", "out", "partials", "tickets", "rows", "cols"]

[[scratch]]
name = "partials"
dtype = "float32"
size = "rows * 8"

[[scratch]]
name = "tickets"
dtype = "uint32"
size = "rows"
init = "zero"
*/
extern "C" __global__ void sum_ticket(const float* x, float* out, float* partials, unsigned int* tickets,
                                      int rows, int cols) {
    __shared__ float acc[64];
    __shared__ bool last;
    const int row = blockIdx.x, part = blockIdx.y, tid = threadIdx.x;
    float a = 0.0f;
    for (int i = part * 64 + tid; i < cols; i += 8 * 64) a += x[(size_t)row * cols + i];
    acc[tid] = a;
    __syncthreads();
    for (int s = 32; s > 0; s >>= 1) {
        if (tid < s) acc[tid] += acc[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        partials[row * 8 + part] = acc[0];
        __threadfence();
        last = atomicAdd(&tickets[row], 1u) == 7u;
    }
    __syncthreads();
    if (last && tid == 0) {
        float s = 0.0f;
        for (int p = 0; p < 8; p++) s += partials[row * 8 + p];
        out[row] = s;
    }
}
"""
SUM_WARP_PER_ROW = """/* mutagym
[[launch]]
kernel = "sum_warp"
grid = ["ceil_div(rows, 4)"]
block = [128]
args = ["x", "out", "rows", "cols"]
*/
extern "C" __global__ void sum_warp(const float* x, float* out, int rows, int cols) {
    const int row = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int i = lane; i < cols; i += 32) acc += x[(size_t)row * cols + i];
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) out[row] = acc;
}
"""
SUM_TWO_PASSES = """/* mutagym
[[launch]]
kernel = "partial_sums"
grid = ["rows", 16]
block = [1]
args = ["x", "chunks", "rows", "cols"]

[[launch]]
kernel = "finish"
grid = ["ceil_div(rows, 64)"]
block = [64]
args = ["chunks", "out", "rows"]

[[scratch]]
name = "chunks"
dtype = "float64"
size = "rows * 16"
*/
extern "C" __global__ void partial_sums(const float* x, double* chunks, int rows, int cols) {
    const int row = blockIdx.x, chunk = blockIdx.y;
    double acc = 0.0;
    for (int i = chunk; i < cols; i += 16) acc += x[(size_t)row * cols + i];
    chunks[row * 16 + chunk] = acc;
}
extern "C" __global__ void finish(const double* chunks, float* out, int rows) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    double s = 0.0;
    for (int c = 0; c < 16; c++) s += chunks[row * 16 + c];
    out[row] = (float)s;
}
"""
RELU_IN_PLACE = """/* mutagym
[[launch]]
kernel = "copy"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "out", "n"]

[[launch]]
kernel = "relu_in_place"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["out", "n"]
*/
extern "C" __global__ void copy(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}
extern "C" __global__ void relu_in_place(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] > 0.0f ? out[i] : 0.0f;
}
"""
OTHER_STYLES = {"sum_dim": [SUM_SPLIT_K_ATOMICS, SUM_LAST_BLOCK_FINISHES, SUM_WARP_PER_ROW, SUM_TWO_PASSES],
                "relu": [RELU_IN_PLACE]}


@pytest.fixture(scope="module")
def judge():
    """The default judge (the reward gate), its pool and fresh stages on a local Ray cluster."""
    j = Judge(backend="cpu", num_cpus=2, workers=2, secret=5)
    yield j
    j.close()


def test_the_plain_checker_alone_pays_these_wrong_kernels():
    """The premise: each wrong kernel passes the committed checker's suite in ascending order, but
    for the missing barrier, which the emulator's race detector names in any order."""
    checker = default_checker()
    # the empty grid too: every input of the committed relu suite has n >= 65,536 (@large, @mod4_3)
    for source, problem in [(RELU_TAIL_NOT_TWO, "relu"), (SOFTMAX_MASK_UNSAFE, "softmax"), (RELU_EMPTY_GRID, "relu")]:
        assert evaluate_source(checker, problem, source).accepted, problem
    race = evaluate_source(checker, "sum_dim", SUM_WITHOUT_BARRIER)
    assert race.outcome == "data_race" and "__shared__ 'partial'" in race.message, race.message
    # a suite chosen over the shape classes holds a size past the presets' residues (n % 4 == 3)
    assert evaluate_source(checker, "relu", RELU_TAIL_OF_ONE).outcome == "wrong"


@pytest.mark.parametrize("source, problem, stage, schedule, category", [
    (RELU_TAIL_OF_ONE, "relu", "suite", "ascending", "wrong"),
    (SUM_WITHOUT_BARRIER, "sum_dim", "suite", "ascending", "runtime_fault"),   # a data_race
    (RELU_EMPTY_GRID, "relu", "pool", "ascending", "runtime_fault"),   # a launch_error below n = 65,536
    (RELU_TAIL_NOT_TWO, "relu", "pool", "ascending", "wrong"),
    (SOFTMAX_MASK_UNSAFE, "softmax", "pool", "ascending", "wrong"),
], ids=["residue the presets lack", "missing barrier", "launch plan", "residue no preset has",
        "masked rows only"])
def test_env_step_pays_nothing_and_names_the_stage(judge, source, problem, stage, schedule, category):
    env = KernelTaskEnv(problems=[problem], judge=judge)
    obs, info = env.reset(seed=0)
    assert judge.checker_id in obs and "thread orders" in obs          # the prompt states the contract
    _, reward, terminated, _, info = env.step(source)
    gate = info["gate"]
    assert reward == 0.0 and terminated and not info["infra_error"]
    assert info["category"] == category
    assert (gate["stage"], gate["schedule"]) == (stage, schedule)
    assert gate["version"] == info["checker"] == judge.checker_id
    assert set(gate["failing"]) == {"generator", "shape", "outcome"}
    if source is RELU_TAIL_NOT_TWO:
        assert gate["failing"]["shape"].startswith("@")        # a shape class caught it
    if source is SOFTMAX_MASK_UNSAFE:
        assert gate["failing"]["generator"] == "masked"
    plain_would_pay = (stage, schedule) != ("suite", "ascending")
    assert gate["checker_alone"]["false_accept"] is plain_would_pay
    assert not re.search(rf"{problem}:[\w*.]+:[\w@]+:\d+", json.dumps(info))   # no input id: no seed


def test_trl_reward_pays_nothing_for_them_and_counts_the_checkers_leak(judge):
    reward = TrlReward(judge)
    problems = ["relu", "sum_dim", "relu", "relu", "softmax", "relu"]
    sources = [RELU_TAIL_OF_ONE + "// trl\n", SUM_WITHOUT_BARRIER + "// trl\n", RELU_EMPTY_GRID + "// trl\n",
               RELU_TAIL_NOT_TWO + "// trl\n", SOFTMAX_MASK_UNSAFE + "// trl\n",
               load_problem("relu").kernel_sources()["substrate"] + "// trl\n"]
    logged = {}
    rewards = reward(prompts=["p"] * 6, completions=sources, problem=problems,
                     log_extra=lambda c, v: logged.update({c: v}), log_metric=lambda n, v: logged.update({n: v}))
    assert rewards == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]     # a launch-plan error is penalised, never None
    assert logged["mutagym/false_accept"] == pytest.approx(3 / 6)   # the plain checker would have paid three
    ledger = judge.leakage.as_dict()[judge.checker_id]
    assert ledger["checker_alone_false_accepts"] >= 3


@pytest.mark.parametrize("problem, sources", [
    ("relu", [RELU_TAIL_OF_ONE, RELU_EMPTY_GRID, RELU_TAIL_NOT_TWO]),
    ("sum_dim", [SUM_WITHOUT_BARRIER]), ("softmax", [SOFTMAX_MASK_UNSAFE])])
def test_mutagym_eval_judges_with_the_gate(tmp_path, problem, sources):
    paths = []
    for k, source in enumerate(sources):
        paths.append(tmp_path / f"k{k}.cu")
        paths[-1].write_text(source)
    proc = subprocess.run([sys.executable, "-m", "mutagym", "eval", *map(str, paths), "--problem", problem,
                           "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    records = json.loads(proc.stdout)
    assert len(records) == len(sources)
    for record in records:
        assert record["checker"].startswith("gate-") and not record["accepted"] and record["reward"] == 0.0
    if problem == "sum_dim":
        assert records[0]["gate"]["schedule"] == "ascending" and records[0]["outcome"] == "data_race"


@pytest.mark.parametrize("problem", sorted(OTHER_STYLES))
def test_correct_kernels_in_other_styles_earn_the_full_reward(judge, problem):
    results = judge.judge_many([(source, problem) for source in OTHER_STYLES[problem]])
    assert [(j.reward, j.message) for j in results] == [(1.0, "")] * len(results)
    assert all(j.gate["stages_run"] == ["suite", "pool", "corner", "fresh", "search"] for j in results)


@pytest.mark.slow
@pytest.mark.parametrize("problem", list_problems())
def test_every_substrate_and_variant_earns_the_full_reward(judge, problem):
    """No false reject: every correct kernel of the catalog passes every stage in every order (a
    problem at a time, so the catalog's cost spreads over the test workers)."""
    items = [(source, problem) for source in load_problem(problem).kernel_sources().values()]
    results = judge.judge_many(items)
    failed = [(name, j.category, j.gate and j.gate["stage"], j.message[:200])
              for name, j in zip(load_problem(problem).kernel_sources(), results) if j.reward != 1.0]
    assert failed == []


def test_a_batch_fresh_stage_is_gated_in_one_run_per_problem(monkeypatch):
    """A trainer's batch shares one fresh draw per problem (no kernel of it can have seen them, and
    a GRPO group is compared on the same hidden cases), gated in one call of the correct kernels per
    problem; the next batch draws anew, and the same secret gives the same draws."""
    import mutagym.envs.fresh_seeds as fresh_seeds
    from mutagym.envs.fresh_seeds import FreshSuites
    from mutagym.envs.gate import RewardGate
    from mutagym.envs.pool import PoolRegistry

    calls = []
    real = fresh_seeds.check_validity
    monkeypatch.setattr(fresh_seeds, "check_validity",
                        lambda p, inputs, *a, **k: calls.append(p.id) or real(p, inputs, *a, **k))
    pools = PoolRegistry()
    batch = ["relu"] * 3 + ["sum_dim"] * 2

    def two_batches(secret):
        gate = RewardGate(default_checker(), pools, FreshSuites(secret, backend="cpu", batch=2))
        return gate.fresh_stages(batch), gate.fresh_stages(batch)

    first, second = two_batches(9)
    assert sorted(set(calls)) == ["relu", "sum_dim"] and len(calls) <= 2 * 4   # a few rounds at most
    assert first[0] == first[1] == first[2] and first[3] == first[4] and first[0] != first[3]
    assert all(stage.name == "fresh" and len(stage.refs) >= len(default_checker().inputs_for(p))
               for stage, p in zip(first, batch))
    seeds = lambda stage: {(r.generator, r.preset, r.seed) for r in stage.refs}   # noqa: E731
    assert seeds(first[0]).isdisjoint(seeds(second[0]))          # the next batch draws anew
    draws = lambda stages: [stage.refs for stage in stages]    # noqa: E731 (times are measured, not drawn)
    again = two_batches(9)
    assert (draws(again[0]), draws(again[1])) == (draws(first), draws(second))
