"""The rules that issue 15's emulator checks (race detector, output poison drawn per case) make
killable: where they fire on the real catalog, that they add mutants without displacing or
duplicating any other rule's, and that their rewrites compile with NVRTC."""

from __future__ import annotations

import pytest

from mutagym.mutants.engine import find_sites
from mutagym.mutants.generate import generate_pool, mutants_for_source
from mutagym.mutants.rule_schema import load_rules
from mutagym.substrates.catalog import load_problem

RULES = {r.id: r for r in load_rules()}
NEW = ("arith-accumulator-init-dropped", "arith-output-init-dropped", "sync-warp-phase-barrier-to-fence",
       "sync-atomic-sub-bitwise-to-plain-rmw", "sync-atomic-max-min-to-plain-rmw",
       "sync-atomic-exch-to-plain-store", "sync-atomic-add-result-to-plain-rmw")


def _src(problem: str) -> str:
    return load_problem(problem).kernel_sources()["substrate"]


def _lines(problem: str, rule: str) -> list[int]:
    return [s.line for s in find_sites(_src(problem), RULES[rule])]


def test_new_rules_are_loaded():
    assert set(NEW) <= set(RULES)


def test_warp_phase_barriers_are_a_subset_of_all_barriers():
    """Every site of the warp-phase rule is a `__syncthreads();` the generic rule removes too."""
    for problem in ("softmax", "log_softmax", "cross_entropy", "instancenorm", "hinge_loss"):
        fence = {(s.start, s.end) for s in find_sites(_src(problem), RULES["sync-warp-phase-barrier-to-fence"])}
        generic = {(s.start, s.end) for s in find_sites(_src(problem), RULES["sync-remove-syncthreads"])}
        assert fence and fence <= generic, problem


def test_warp_phase_barrier_sites_in_the_catalog():
    """softmax: the barrier inside `block_max`, its trailing barrier (the caller's `block_sum`
    reuses `red` right after) and the one inside `block_sum`; not `block_sum`'s trailing barrier,
    after which no warp phase follows. Shared-memory tree reductions (layernorm, the
    `block_sum(red)` of linear_layernorm) have no site."""
    src = _src("softmax").splitlines()
    lines = _lines("softmax", "sync-warp-phase-barrier-to-fence")
    barriers = [i + 1 for i, ln in enumerate(src) if ln.strip() == "__syncthreads();"]
    assert lines == barriers[:3] and len(barriers) == 4
    assert _lines("cross_entropy", "sync-warp-phase-barrier-to-fence") == [61, 69, 81, 105]
    assert _lines("instancenorm", "sync-warp-phase-barrier-to-fence") == [31, 39]
    assert _lines("layernorm", "sync-warp-phase-barrier-to-fence") == []
    assert _lines("linear_layernorm", "sync-warp-phase-barrier-to-fence") == []


def test_accumulator_init_sites_in_the_catalog():
    """The running max, the sum and the product start from their identity; the arg index of
    argmax (initialised to `cols`, not an identity) and the loop counters have no site."""
    assert [s.original for s in find_sites(_src("softmax"), RULES["arith-accumulator-init-dropped"])] == \
        ["m = -INFINITY", "s = 0.0f"]
    assert [s.original for s in find_sites(_src("argmax_dim"), RULES["arith-accumulator-init-dropped"])] == \
        ["best = -INFINITY"]
    assert [s.replacement for s in find_sites(_src("prod_dim"), RULES["arith-accumulator-init-dropped"])] == ["acc"]


@pytest.mark.slow
def test_new_rules_add_mutants_and_displace_none():
    """On the whole catalog the old rules' mutants are all still there, and none of the new
    rules' mutants is a duplicate of another (the fence is not the generic barrier removal)."""
    pool = generate_pool(skip_broken=True)
    old = generate_pool(rules=[r for r in RULES.values() if r.id not in NEW], skip_broken=True)
    assert {m.id for m in old.mutants} <= {m.id for m in pool.mutants}
    added = [m for m in pool.mutants if m.rule in NEW]
    assert len(added) == len(pool.mutants) - len(old.mutants)
    counts = {r: sum(m.rule == r for m in added) for r in NEW}
    assert counts["sync-warp-phase-barrier-to-fence"] >= 20 and counts["arith-accumulator-init-dropped"] >= 60
    assert not set(pool.duplicates) - set(old.duplicates)


ATOMICS = '''/* mutagym
[[launch]]
kernel = "k"
grid = [4]
block = [64]
args = ["out", "n"]
*/
extern "C" __global__ void k(float* __restrict__ out, int n) {
    __shared__ int cnt[4];
    __shared__ unsigned bits[2];
    __shared__ float acc[2];
    if (threadIdx.x < 4) cnt[threadIdx.x] = 0;
    if (threadIdx.x < 2) { bits[threadIdx.x] = 0u; acc[threadIdx.x] = 0.0f; }
    __syncthreads();
    atomicSub(&cnt[0], 1);
    atomicOr(&bits[0], 1u << (threadIdx.x & 31));
    atomicAnd(bits + 1, ~0u);
    atomicXor(&bits[1], 3u);
    atomicMax(&cnt[1], (int)threadIdx.x);
    atomicMin(&cnt[2], -(int)threadIdx.x);
    atomicExch(&cnt[3], 7);
    const int t = atomicAdd(&cnt[0], 2);
    const float f = atomicAdd(&acc[1], 0.5f);
    __syncthreads();
    if (threadIdx.x == 0) {
        out[blockIdx.x] = (float)(cnt[0] + cnt[1] + cnt[2] + cnt[3] + t) + f + (float)(bits[0] ^ bits[1]);
    }
}
'''


def test_atomic_rewrites_compile_with_nvrtc():
    """No substrate of the catalog uses these atomics yet: each rewrite is compiled on a kernel
    that does (NVRTC only; the emulator's build runs in the pool's own gate)."""
    from mutagym.mutants.compile_gate import gate

    rules = [RULES[r] for r in NEW if r.startswith("sync-atomic")]
    mutants, dups = mutants_for_source("atomics", ATOMICS, rules)
    assert not dups
    assert sorted(m.rule for m in mutants) == sorted(
        ["sync-atomic-sub-bitwise-to-plain-rmw"] * 4 + ["sync-atomic-max-min-to-plain-rmw"] * 2
        + ["sync-atomic-exch-to-plain-store"] + ["sync-atomic-add-result-to-plain-rmw"] * 2)
    assert "{ if (*(&cnt[1]) < ((int)threadIdx.x)) *(&cnt[1]) = ((int)threadIdx.x); }" in {m.replacement for m in mutants}
    assert [g.status for g in gate(mutants, cpu=False)] == ["compilable"] * len(mutants)
