"""The mutant pool: stable ids, deterministic order, deduplication, no rewrites in comments,
strings or the launch block, and every family represented on the real catalog."""

from __future__ import annotations

import re

import pytest

from mutagym.mutants.engine import find_sites
from mutagym.mutants.generate import MutantPool, generate_pool, mutant_id, mutants_for_source, sha256_text
from mutagym.mutants.rule_schema import FAMILIES, load_rules
from mutagym.substrates.catalog import load_problem

RULES = {r.id: r for r in load_rules()}

# An independent scanner for the spans no rule may touch: comments and string/char literals.
_OPAQUE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _opaque_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _OPAQUE.finditer(text)]


@pytest.fixture(scope="module")
def catalog_pool() -> MutantPool:
    return generate_pool(skip_broken=True)


def test_every_family_has_mutants_on_the_catalog(catalog_pool):
    counts = catalog_pool.counts("family")
    assert set(counts) == set(FAMILIES), counts
    assert all(counts[f] >= 1 for f in FAMILIES)


def test_every_rule_id_and_family_are_recorded(catalog_pool):
    for m in catalog_pool.mutants[:200]:
        assert RULES[m.rule].family == m.family
        assert m.evasion == RULES[m.rule].evasion.value


def test_mutant_ids_are_stable_hashes(catalog_pool):
    m = catalog_pool.mutants[0]
    assert re.fullmatch(r"[0-9a-f]{16}", m.id)
    src = load_problem(m.problem).kernel_sources()["substrate"]
    assert m.substrate_sha256 == sha256_text(src)
    assert m.id == mutant_id(m.problem, m.substrate_sha256, m.rule, m.site)
    ids = [x.id for x in catalog_pool.mutants]
    assert len(ids) == len(set(ids))


def test_generation_is_deterministic(catalog_pool):
    """Two generations give the same mutants, ids, sources and order."""
    problems = sorted({m.problem for m in catalog_pool.mutants})[:6]
    again = generate_pool(problems)
    first = [m for m in catalog_pool.mutants if m.problem in problems]
    assert [(m.id, m.source, m.diff) for m in again.mutants] == [(m.id, m.source, m.diff) for m in first]


def test_order_is_problem_family_rule_site(catalog_pool):
    rule_order = {rid: i for i, rid in enumerate(RULES)}   # load_rules: family order, then file order
    keys = [(m.problem, rule_order[m.rule], m.site) for m in catalog_pool.mutants]
    assert keys == sorted(keys)


def test_mutant_is_one_rewrite_with_a_diff(catalog_pool):
    """Each mutant equals the substrate with [start, end) replaced, and its diff shows the line."""
    sources = {}
    for m in catalog_pool.mutants[::7]:
        src = sources.setdefault(m.problem, load_problem(m.problem).kernel_sources()["substrate"])
        assert src[m.start:m.end] == m.original
        assert m.source == src[:m.start] + m.replacement + src[m.end:]
        assert m.source != src
        assert m.line == src.count("\n", 0, m.start) + 1
        assert m.diff.startswith(f"--- {m.problem}/substrate.cu\n+++ {m.problem}/mutant-{m.id}.cu\n")
        hunk = re.search(r"^@@ -(\d+),(\d+) ", m.diff, re.M)
        first, count = int(hunk.group(1)), int(hunk.group(2))
        assert first <= m.line < first + count
        assert re.search(r"^-(?!--)", m.diff, re.M) and re.search(r"^\+(?!\+\+)", m.diff, re.M)


def test_no_site_in_comments_strings_or_launch_block(catalog_pool):
    """Checked with an independent regex scanner over every mutant of the catalog."""
    spans = {}
    for m in catalog_pool.mutants:
        if RULES[m.rule].target != "kernel":
            continue
        if m.problem not in spans:
            spans[m.problem] = _opaque_spans(load_problem(m.problem).kernel_sources()["substrate"])
        for s, e in spans[m.problem]:
            assert not (s <= m.start < e), f"{m.problem} {m.rule} at line {m.line} rewrites inside {s}:{e}"


def test_identical_sources_are_deduplicated_keeping_the_lowest_id():
    """`a + a` -> `a` by dropping either addend: one mutant survives, the lower id."""
    src = "__device__ float f(float a) { return a + a; }\n"
    rules = [RULES["arith-drop-right-addend"], RULES["arith-drop-left-addend"]]
    mutants, dups = mutants_for_source("p", src, rules)
    assert len(mutants) == 1 and len(dups) == 1
    ids = sorted([mutants[0].id, *dups])
    assert mutants[0].id == ids[0] and dups[ids[1]] == ids[0]
    assert mutants[0].source == "__device__ float f(float a) { return a; }\n"


def test_no_op_rewrites_are_not_mutants():
    """A rewrite that leaves the text unchanged (`a[i][i]` transposed) gives no site."""
    assert find_sites("float k(float* a, int i) { return a[i][i]; }", RULES["idx-swap-2d-subscripts"]) == []


LAUNCH = '''/* mutagym
[[launch]]
kernel = "k"
grid = ["ceil_div(n, 256)"]   # a + b, __syncthreads(); threadIdx.x
block = [256]
args = ["x", "out", "n"]
*/
// out = x + 1 (a comment with a + b and __syncthreads();)
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ out, int n) {
    const char* tag = "x + 1; __syncthreads();";
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + 1.0f;
    }
    __syncthreads();
}
'''


def test_launch_block_comments_and_strings_are_never_rewritten():
    kernel_rules = [r for r in RULES.values() if r.target == "kernel"]
    mutants, _ = mutants_for_source("launch", LAUNCH, kernel_rules)
    assert mutants
    head = LAUNCH[:LAUNCH.index("extern")]          # the launch block and the comment line
    for m in mutants:
        assert m.source.startswith(head), (m.rule, m.line)
        assert '"x + 1; __syncthreads();"' in m.source, (m.rule, m.line)
    assert {m.rule for m in mutants} >= {"sync-remove-syncthreads", "arith-add-to-sub", "bound-guard-lt-to-le"}
    assert sum(m.rule == "sync-remove-syncthreads" for m in mutants) == 1


# ---------------------------------------------------------------------------------------------
# compile gate and Parquet table
# ---------------------------------------------------------------------------------------------

GATE_SRC = '''/* mutagym
[[launch]]
kernel = "scale"
grid = ["ceil_div(n, 128)"]
block = [128]
args = ["x", "out", "n"]
*/
extern "C" __global__ void scale(const float* __restrict__ x, float4* __restrict__ out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 v = make_float4(x[i], 0.0f, 0.0f, 0.0f);
        out[i] = v;
    }
}
'''


def test_compile_gate_and_parquet_round_trip(tmp_path):
    """`out[i] = 0.0f` on a float4 store is uncompilable (NVRTC says why); `i <= n` compiles.
    The pool table keeps every field and the gate's verdict."""
    from mutagym.mutants.compile_gate import gate
    from mutagym.mutants.pool_table import read_pool, write_pool

    rules = [RULES["arith-store-zero"], RULES["bound-guard-lt-to-le"]]
    mutants, _ = mutants_for_source("gate", GATE_SRC, rules)
    assert [m.rule for m in mutants] == ["arith-store-zero", "bound-guard-lt-to-le"]
    results = gate(mutants)
    assert [(g.status, g.stage) for g in results] == [("uncompilable", "nvrtc"), ("compilable", None)]
    assert "line 12" in results[0].error and "\n" not in results[0].error
    path = tmp_path / "pool" / "mutants.parquet"
    write_pool(mutants, path, results)
    table = read_pool(path)
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == [m.id for m in mutants]
    assert rows[0]["status"] == "uncompilable" and rows[1]["status"] == "compilable"
    assert rows[1]["source"] == mutants[1].source and rows[1]["line"] == mutants[1].line
    assert gate(mutants, cpu=False, workers=2) == gate(mutants, cpu=False)   # worker processes agree


def test_launch_rules_only_rewrite_launch_expressions(catalog_pool):
    """`grid` rules rewrite a string expression of the launch block and nothing else."""
    launch = [m for m in catalog_pool.mutants if RULES[m.rule].target != "kernel"]
    assert launch
    for m in launch[:100]:
        src = load_problem(m.problem).kernel_sources()["substrate"]
        block_end = src.index("*/")
        assert m.end <= block_end
        line = src.splitlines()[m.line - 1]
        assert line.lstrip().startswith("grid")
    mutants, _ = mutants_for_source("launch", LAUNCH, [RULES["bound-launch-ceil-div-to-floor"]])
    assert [m.replacement for m in mutants] == ["n // 256"]
    assert mutants[0].source.split("*/", 1)[1] == LAUNCH.split("*/", 1)[1]


def test_generation_is_identical_in_a_fresh_process(catalog_pool):
    """Another interpreter with another hash seed produces the same ids and sources."""
    import hashlib
    import os
    import subprocess
    import sys

    problems = sorted({m.problem for m in catalog_pool.mutants})[:4]
    code = (
        "import hashlib, sys\n"
        "from mutagym.mutants.generate import generate_pool\n"
        f"pool = generate_pool({problems!r})\n"
        "h = hashlib.sha256()\n"
        "for m in pool.mutants: h.update((m.id + '\\0' + m.source + '\\0').encode())\n"
        "print(len(pool.mutants), h.hexdigest())\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout.split()
    here = [m for m in catalog_pool.mutants if m.problem in problems]
    h = hashlib.sha256()
    for m in here:
        h.update((m.id + "\0" + m.source + "\0").encode())
    assert out == [str(len(here)), h.hexdigest()]


def test_relu_clamp_mutant_runs_and_only_negative_inputs_kill_it():
    """End to end on the CPU emulator: the `dom-drop-relu-max` mutant of `relu` matches the
    reference on uniform [0, 1) inputs (input-domain evasion) and fails once inputs go negative."""
    import numpy as np

    from mutagym.runtime import compile

    problem = load_problem("relu")
    mutants, _ = mutants_for_source("relu", problem.kernel_sources()["substrate"], [RULES["dom-drop-relu-max"]])
    assert mutants
    kernel = compile(mutants[0].source, backend="cpu")
    n = 1030                                        # not a multiple of 4: the scalar tail runs too
    dims = {"n": n}
    rng = np.random.default_rng(0)
    outs = {}
    for name, x in {"uniform01": rng.random(n, dtype=np.float32),
                    "sign_mixed": rng.standard_normal(n).astype(np.float32)}.items():
        result = kernel.run({"x": x}, problem.output_specs(dims), dims)
        assert result.ok, result.message
        ref = problem.reference_outputs({"x": x})["out"]
        outs[name] = bool(np.allclose(result.outputs["out"], ref, atol=1e-2, rtol=1e-2))
    assert outs == {"uniform01": True, "sign_mixed": False}
