"""Every rule fires where its `invalid` cases say, with the expected rewrite, and never on its
`valid` cases, in comments, in strings or in the launch block (ast-grep's case statuses)."""

from __future__ import annotations

import pytest

from mutagym.mutants.rule_check import CaseResult, check_rule, summary_line
from mutagym.mutants.rule_schema import FAMILIES, load_rule_file, load_rules, rules_dir

RULES = load_rules()


def _ids(rules):
    return [r.id for r in rules]


def _failures(results: list[CaseResult], kind: str) -> str:
    return "\n\n".join(r.describe() for r in results if r.kind == kind and not r.ok)


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_rule_fires_on_invalid_cases(rule):
    """Each `invalid` case is `reported`: one rewrite per expected site, exactly the expected text."""
    results = check_rule(rule)
    assert not _failures(results, "invalid"), _failures(results, "invalid")


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_rule_silent_on_valid_cases(rule):
    """Each `valid` case (comments, strings, look-alike identifiers) is `validated`: no site."""
    results = check_rule(rule)
    assert not _failures(results, "valid"), _failures(results, "valid")


@pytest.mark.parametrize("rule", RULES, ids=_ids(RULES))
def test_rule_silent_in_comments_strings_and_launch_block(rule):
    """The rule's own firing code, put in a line comment, a block comment, a string literal and
    (kernel rules) the `/* mutagym */` launch block, never fires."""
    results = check_rule(rule)
    assert [r for r in results if r.kind == "hidden"]
    assert not _failures(results, "hidden"), _failures(results, "hidden")


def test_summary_marks_statuses():
    rule = next(r for r in RULES if r.id == "arith-add-to-sub")
    results = check_rule(rule)
    assert summary_line(rule.id, results).startswith("PASS arith-add-to-sub  R...")
    broken = rule.model_copy(update={"fix": "$A * $B"})
    line = summary_line(broken.id, check_rule(broken))
    assert line.startswith("FAIL arith-add-to-sub  W")


def test_every_family_has_rules():
    """Each family of `FAMILIES` has a rule file with at least one rule."""
    assert {r.family for r in RULES} == set(FAMILIES)


def test_rule_ids_are_unique_and_files_load_alone():
    ids = _ids(RULES)
    assert len(ids) == len(set(ids))
    assert sum(len(load_rule_file(rules_dir() / f"{f}.yml")) for f in FAMILIES) == len(RULES)


def test_catalog_page_is_current():
    """`rules/CATALOG.md` is what `python -m mutagym.mutants.rule_check` prints."""
    from mutagym.mutants.rule_check import catalog_markdown

    shipped = (rules_dir() / "CATALOG.md").read_text()
    assert shipped == catalog_markdown(), "regenerate: python -m mutagym.mutants.rule_check > rules/CATALOG.md"
