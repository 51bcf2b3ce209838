"""Apply one mutation rule to CUDA source: find its sites structurally, rewrite one site at a time.

tree-sitter's C++ grammar parses CUDA device code once the CUDA qualifiers (`__global__`,
`__device__`, `__shared__`, `__restrict__`, `__launch_bounds__(...)`, ...) are out of the way, so
the engine parses a *masked* copy in which each qualifier is overwritten by as many spaces. Every
offset stays the same, so matches found in the masked copy are cut out of, and spliced into, the
original text, qualifiers included.

Structural matching never looks inside a comment or a string; as a second wall the engine drops
any site that lies in a comment, a string or character literal, or the leading `/* mutagym */`
launch block.

>>> from mutagym.mutants.rule_schema import load_rules
>>> rule = next(r for r in load_rules() if r.id == "sync-remove-syncthreads")
>>> src = "__global__ void k(float* a) {\\n    // __syncthreads();\\n    __syncthreads();\\n}\\n"
>>> [(s.line, s.ordinal) for s in find_sites(src, rule)]
[(3, 0)]
>>> print(apply_site(src, find_sites(src, rule)[0]))
__global__ void k(float* a) {
    // __syncthreads();
    ;
}
<BLANKLINE>
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from ast_grep_py import SgNode, SgRoot

from .rule_schema import METAVAR_RE, RuleSpec

__all__ = ["Site", "apply_site", "find_sites", "mask_cuda", "mutate"]

_QUALIFIERS = re.compile(
    r"__launch_bounds__\s*\([^()]*\)"
    r"|\b__(?:global|device|host|forceinline|noinline|shared|constant|restrict|managed|grid_constant)__\b"
)
_LAUNCH_BLOCK = re.compile(r"\A\s*/\*\s*mutagym\b.*?\*/", re.S)
_OPAQUE_KINDS = frozenset({
    "comment", "string_literal", "raw_string_literal", "char_literal", "concatenated_string",
    "system_lib_string",
})


def mask_cuda(source: str) -> str:
    """*source* with every CUDA qualifier blanked to spaces (same length, same offsets)."""
    return _QUALIFIERS.sub(lambda m: " " * len(m.group()), source)


@dataclass(frozen=True)
class Site:
    """One place a rule fires: the character span it replaces and the replacement text."""

    rule_id: str
    ordinal: int      # 0-based, in source order among this rule's sites
    start: int        # character offsets into the source
    end: int
    line: int         # 1-based line of `start`
    original: str
    replacement: str


def _opaque_spans(root: SgNode) -> list[tuple[int, int]]:
    spans = []
    for kind in sorted(_OPAQUE_KINDS):
        for n in root.find_all(kind=kind):
            r = n.range()
            spans.append((r.start.index, r.end.index))
    return spans


@functools.lru_cache(maxsize=8)
def _parse(source: str) -> tuple[SgNode, tuple[tuple[int, int], ...]]:
    """The root of the masked parse of *source*, and the spans no rule may rewrite."""
    root = SgRoot(mask_cuda(source), "cpp").root()
    opaque = _opaque_spans(root)
    launch = _LAUNCH_BLOCK.match(source)
    if launch:
        opaque.append((launch.start(), launch.end()))
    return root, tuple(opaque)


_RUST_GROUP = re.compile(r"\$(?:\{(\w+)\}|(\d+))")


def _replace_transforms(transforms: dict[str, dict], match: SgNode, source: str) -> dict[str, str]:
    """The `replace` transforms of a rule, run on the original text of their sources.

    ast-grep would run them on the masked text (a `__shared__` inside a rewritten block would come
    back as spaces) and re-indent multi-line results; a multi-site rule rewrites whole blocks, so
    the engine applies the regex itself, in the rule's order (a transform may read an earlier one).
    Rust's `$1` / `${1}` group references become Python's.
    """
    values: dict[str, str] = {}
    for name, spec in transforms.items():
        args = spec.get("replace")
        if args is None:
            continue
        ref = str(args["source"])
        src = ref.lstrip("$")
        if src in values:
            text = values[src]
        else:
            nodes = match.get_multiple_matches(src) if ref.startswith("$$$") else [match.get_match(src)]
            nodes = [n for n in nodes if n is not None]
            text = source[nodes[0].range().start.index:nodes[-1].range().end.index] if nodes else ""
        by = _RUST_GROUP.sub(lambda g: "\\g<" + (g.group(1) or g.group(2)) + ">",
                             str(args["by"]).replace("\\", "\\\\"))
        values[name] = re.sub(args["replace"], by, text)
    return values


def _render(fix: str, match: SgNode, source: str, transforms: dict[str, dict]) -> str:
    replaced = _replace_transforms(transforms, match, source) if transforms else {}

    def sub(m: re.Match[str]) -> str:
        multi, single = m.group(1), m.group(2)
        if multi is not None:
            nodes = match.get_multiple_matches(multi)
            if not nodes:
                return ""
            return source[nodes[0].range().start.index:nodes[-1].range().end.index]
        if single in replaced:
            return replaced[single]
        if single in transforms:
            t = match.get_transformed(single)
            if t is not None:
                return t
        node = match.get_match(single)
        if node is None:  # bound only on another branch of an `any`
            return ""
        r = node.range()
        return source[r.start.index:r.end.index]

    return METAVAR_RE.sub(sub, fix)


_EXPR_PREFIX = "int __mg_launch_expr = ("
_EXPR_SUFFIX = ");"
_LAUNCH_ARRAY = re.compile(r"^[ \t]*(grid|block)[ \t]*=[ \t]*\[([^\]\n]*)\]", re.M)
_STRING = re.compile(r'"([^"\\\n]*)"')


def _launch_expressions(source: str, key: str) -> list[tuple[int, str]]:
    """(offset in *source*, text) of each string expression in the launch block's *key* arrays."""
    block = _LAUNCH_BLOCK.match(source)
    if not block:
        return []
    text = block.group()
    out = []
    for arr in _LAUNCH_ARRAY.finditer(text):
        if arr.group(1) != key:
            continue
        line_end = text.find("\n", arr.start())
        comment = text.find("#", arr.start(), line_end if line_end >= 0 else len(text))
        for lit in _STRING.finditer(text, arr.start(2), arr.end(2)):
            if 0 <= comment < lit.start():
                break
            out.append((block.start() + lit.start(1), lit.group(1)))
    return out


def find_sites(source: str, rule: RuleSpec) -> list[Site]:
    """Every site of *rule* in *source*, in source order (by start, then end).

    A `kernel` rule never returns a site inside a comment, a string or the `/* mutagym */` launch
    block; a `grid` / `block` rule only returns sites inside that block's expressions. A site whose
    rewrite leaves the text unchanged is dropped; one whose first lines are unchanged (a block
    rewritten in two places) starts at its first changed line.
    """
    transforms = rule.transform
    found: dict[tuple[int, int], str] = {}
    if rule.target == "kernel":
        root, opaque = _parse(source)
        for m in root.find_all(rule.config()):
            r = m.range()
            start, end = r.start.index, r.end.index
            if any(s <= start and end <= e for s, e in opaque):
                continue
            if (start, end) not in found:
                found[(start, end)] = _render(rule.fix, m, source, transforms)
    else:
        for base, expr in _launch_expressions(source, rule.target):
            wrapped = _EXPR_PREFIX + expr + _EXPR_SUFFIX
            root = SgRoot(wrapped, "cpp").root()
            for m in root.find_all(rule.config()):
                r = m.range()
                start, end = r.start.index - len(_EXPR_PREFIX), r.end.index - len(_EXPR_PREFIX)
                if start < 0 or end > len(expr):
                    continue
                key = (base + start, base + end)
                if key not in found:
                    found[key] = _render(rule.fix, m, wrapped, transforms)
    sites = []
    for start, end in sorted(found):
        original = source[start:end]
        replacement = found[(start, end)]
        if replacement == original:
            continue
        # a block rewritten in two places starts at its first changed line (its line and diff)
        same = os.path.commonprefix([original, replacement])
        keep = original.rfind("\n", 0, len(same)) + 1
        start, original, replacement = start + keep, original[keep:], replacement[keep:]
        sites.append(Site(rule.id, len(sites), start, end, source.count("\n", 0, start) + 1,
                          original, replacement))
    return sites


def apply_site(source: str, site: Site) -> str:
    """*source* with *site* rewritten."""
    return source[:site.start] + site.replacement + source[site.end:]


def mutate(source: str, rule: RuleSpec) -> list[tuple[Site, str]]:
    """One mutated source per site of *rule* in *source*."""
    return [(s, apply_site(source, s)) for s in find_sites(source, rule)]
