"""The rewrite engine: CUDA masking, metavariable rendering, the comment/string/launch-block wall."""

from __future__ import annotations

from mutagym.mutants.engine import apply_site, find_sites, mask_cuda
from mutagym.mutants.rule_schema import RuleSpec

CASES = {"invalid": [{"code": "x", "fixed": "y"}], "valid": ["z"]}


def _rule(**kw) -> RuleSpec:
    base = dict(id="t-rule", family="arithmetic", message="m", evasion="other", tests=CASES)
    return RuleSpec.model_validate({**base, **kw})


def test_mask_keeps_offsets_and_parses_cuda():
    src = ('extern "C" __global__ void __launch_bounds__(256) k(const float* __restrict__ x) '
           '{ __shared__ float s[32]; }')
    masked = mask_cuda(src)
    assert len(masked) == len(src)
    assert "__global__" not in masked and "__launch_bounds__" not in masked and "__restrict__" not in masked
    assert masked.index("void") == src.index("void")


def test_rewrite_keeps_cuda_qualifiers_of_the_original_text():
    """Metavariable text comes from the original source, not the masked copy."""
    rule = _rule(rule={"pattern": "$T $X = $V;"}, fix="$T $X = -$V;")
    src = "__device__ void f(const float* __restrict__ p) { float* __restrict__ q = p; }"
    sites = find_sites(src, rule)
    assert [s.original for s in sites] == ["float* __restrict__ q = p;"]
    assert apply_site(src, sites[0]).endswith("{ float * __restrict__ q = -p; }")   # $X: `* __restrict__ q`


def test_multi_metavariable_and_transform():
    """`$$$ARGS` inserts the source span of all matched nodes; a transform's result can be used."""
    rule = _rule(rule={"pattern": "g($$$ARGS)"},
                 transform={"NAME": {"replace": {"source": "$$$ARGS", "replace": "a", "by": "b"}}},
                 fix="h($$$ARGS) + $NAME")
    [site] = find_sites("void f(int a, int c) { g(a,  c); }", rule)
    assert site.replacement == "h(a,  c) + b,  c"


def test_replace_transform_runs_on_the_original_text_of_a_block():
    """A block rewritten by a `replace` transform keeps its CUDA qualifiers and its indentation
    (ast-grep alone would return the masked, re-indented text); `${1}` groups are Rust's."""
    rule = _rule(rule={"pattern": "$B", "kind": "compound_statement",
                       "inside": {"kind": "function_definition"}},
                 transform={"ONE": {"replace": {"source": "$B", "replace": r"(\w+)\[tid\]", "by": "${1}[0]"}},
                            "TWO": {"replace": {"source": "$ONE", "replace": "s_", "by": "t_"}}},
                 fix="$TWO")
    src = "__global__ void k(float* o) {\n    __shared__ float s_x[32];\n        s_x[tid] = o[tid];\n}\n"
    [site] = find_sites(src, rule)
    assert site.line == 2   # the block's first changed line
    assert site.replacement == "    __shared__ float t_x[32];\n        t_x[0] = o[0];\n}"
    assert apply_site(src, site) == src.replace("s_x[tid]", "t_x[0]").replace("o[tid]", "o[0]").replace("s_x", "t_x")


def test_engine_drops_sites_in_comments_strings_and_launch_block_even_if_a_rule_targets_them():
    """A rule that asks for comments or strings gets nothing: the engine's second wall."""
    src = ('/* mutagym\n[[launch]]\nkernel = "k"\n*/\n// note\n'
           'void k() { const char* s = "x"; char c = \'y\'; /* z */ }\n')
    for kind in ("comment", "string_literal", "char_literal"):
        assert find_sites(src, _rule(rule={"kind": kind}, fix="Q")) == []
    assert find_sites(src, _rule(rule={"kind": "string_content"}, fix="Q")) == []


def test_sites_are_ordered_and_numbered():
    rule = _rule(rule={"pattern": "$A + $B"}, fix="$A - $B")
    sites = find_sites("int f(int a, int b, int c) {\n return a + b + c;\n}", rule)
    assert [(s.ordinal, s.original, s.line) for s in sites] == [(0, "a + b", 2), (1, "a + b + c", 2)]
