"""Run each rule on its own test cases, with ast-grep's case statuses.

| case \\ rule    | no site     | sites                                   |
| -------------- | ----------- | --------------------------------------- |
| `valid` code   | `validated` | `noisy`                                 |
| `invalid` code | `missing`   | `reported` (rewrites as expected) or `wrong` |

Besides its listed cases, every `invalid` snippet is also run once put in a line comment, a block
comment, a string literal and (for kernel rules) the `/* mutagym */` launch block: each of these
must be `validated` too.

>>> from mutagym.mutants.rule_schema import load_rules
>>> rule = next(r for r in load_rules() if r.id == "sync-remove-syncthreads")
>>> [r.status for r in check_rule(rule)]
['reported', 'validated', 'validated', 'validated', 'validated', 'validated', 'validated']
>>> summary_line(rule.id, check_rule(rule))
'PASS sync-remove-syncthreads  R......'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .engine import find_sites, mutate
from .rule_schema import RuleSpec, load_rules

__all__ = ["CaseResult", "catalog_markdown", "check_rule", "check_rules", "hidden_variants", "summary_line"]

Status = Literal["validated", "reported", "wrong", "missing", "noisy"]
_MARK = {"validated": ".", "reported": "R", "wrong": "W", "missing": "M", "noisy": "N"}


@dataclass(frozen=True)
class CaseResult:
    """One test case of one rule: what was expected, what happened."""

    rule: str
    kind: Literal["invalid", "valid", "hidden"]   # hidden: an invalid snippet in a comment/string
    status: Status
    code: str
    expected: tuple[str, ...] = ()   # the rewrites an `invalid` case lists
    actual: tuple[str, ...] = ()     # the rewrites the rule made (sites' text for valid cases)

    @property
    def ok(self) -> bool:
        return self.status in ("validated", "reported")

    def describe(self) -> str:
        """A failure report: status, the code, expected and actual rewrites."""
        lines = [f"[{self.status}] {self.rule} ({self.kind} case):", self.code]
        if self.status == "wrong":
            lines += ["expected:", *self.expected, "actual:", *self.actual]
        elif self.status == "noisy":
            lines += ["fired at:", *self.actual]
        return "\n".join(lines)


def hidden_variants(code: str, rule: RuleSpec) -> list[str]:
    """*code* in a line comment, a block comment, a string literal and (kernel rules) a launch block."""
    escaped = code.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    out = [
        "\n".join("// " + ln for ln in code.splitlines()),
        "/* " + code.replace("*/", "* /") + " */",
        f'const char* s = "{escaped}";',
    ]
    if rule.target == "kernel":  # a launch-plan rule rewrites the launch block by design
        out.append('/* mutagym\n[[launch]]\nkernel = "k"\n' + code.replace("*/", "* /") + "\n*/\n")
    return out


def check_rule(rule: RuleSpec) -> list[CaseResult]:
    """Every case of *rule*: its `invalid` cases, its `valid` cases, then the hidden variants."""
    results: list[CaseResult] = []
    for case in rule.tests.invalid:
        actual = tuple(src for _, src in mutate(case.code, rule))
        expected = tuple(case.expected())
        status: Status = "missing" if not actual else ("reported" if actual == expected else "wrong")
        results.append(CaseResult(rule.id, "invalid", status, case.code, expected, actual))
    for code in rule.tests.valid:
        sites = tuple(s.original for s in find_sites(code, rule))
        results.append(CaseResult(rule.id, "valid", "noisy" if sites else "validated", code, (), sites))
    for case in rule.tests.invalid:
        for code in hidden_variants(case.code, rule):
            sites = tuple(s.original for s in find_sites(code, rule))
            results.append(CaseResult(rule.id, "hidden", "noisy" if sites else "validated", code, (), sites))
    return results


def check_rules(rules: Sequence[RuleSpec] | None = None) -> dict[str, list[CaseResult]]:
    """`check_rule` for each of *rules* (default: all), keyed by rule id, in load order."""
    return {r.id: check_rule(r) for r in (rules if rules is not None else load_rules())}


def summary_line(rule_id: str, results: Sequence[CaseResult]) -> str:
    """`PASS <id>  <one mark per case>` (R reported, . validated, W wrong, M missing, N noisy)."""
    verdict = "PASS" if all(r.ok for r in results) else "FAIL"
    return f"{verdict} {rule_id}  " + "".join(_MARK[r.status] for r in results)


def catalog_markdown(rules: Sequence[RuleSpec] | None = None) -> str:
    """The rule catalog (`rules/CATALOG.md`): per family, each rule's message, why tests miss it,
    its ast-grep rule and fix, and a -/+ diff of its first `invalid` case."""
    import difflib

    import yaml

    from .rule_schema import FAMILIES

    rules = list(rules if rules is not None else load_rules())
    out = ["# Rule catalog", "",
           "Generated from the rule files by `python -m mutagym.mutants.rule_check > rules/CATALOG.md`.",
           "Helper rules used with `matches:` are defined under `utils:` at the top of each family file.",
           "", "| family | rules |", "| --- | --- |"]
    out += [f"| {f} | {sum(r.family == f for r in rules)} |" for f in FAMILIES]
    for fam in FAMILIES:
        out += ["", f"## {fam}", ""]
        for r in (r for r in rules if r.family == fam):
            body = {"rule": r.rule}
            if r.constraints:
                body["constraints"] = r.constraints
            if r.transform:
                body["transform"] = r.transform
            body["fix"] = r.fix
            case = r.tests.invalid[0]
            diff = list(difflib.unified_diff(case.code.splitlines(), case.expected()[0].splitlines(),
                                             lineterm="", n=0))[2:]
            diff = [ln for ln in diff if not ln.startswith("@@")]
            target = "" if r.target == "kernel" else f" Target: launch `{r.target}` expressions."
            out += [f"### `{r.id}`", "", f"{r.message}. Why tests miss it: *{r.evasion.value}*.{target}", ""]
            if r.note:
                out += [r.note, ""]
            out += ["```yaml", yaml.safe_dump(body, sort_keys=False, width=100).rstrip(), "```", "",
                    "```diff", *diff, "```", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # python -m mutagym.mutants.rule_check > rules/CATALOG.md
    print(catalog_markdown(), end="")
