"""The rule schema rejects malformed rule files with the file, the rule id and the reason."""

from __future__ import annotations

import pytest

from mutagym.mutants.rule_schema import (
    FAMILIES,
    Evasion,
    RuleFileError,
    load_rule_file,
    load_rules,
    rules_dir,
)

GOOD_RULE = """
  - id: arith-add-to-sub
    message: "`a + b` becomes `a - b`"
    evasion: other
    rule: {pattern: $A + $B}
    fix: $A - $B
    tests:
      invalid:
        - {code: 'int f(int a, int b) { return a + b; }', fixed: 'int f(int a, int b) { return a - b; }'}
      valid: ['// a + b']
"""


def _write(tmp_path, body: str, name: str = "arithmetic.yml", family: str = "arithmetic"):
    path = tmp_path / name
    path.write_text(f"family: {family}\nrules:\n{body}")
    return path


def test_good_file_loads(tmp_path):
    rules = load_rule_file(_write(tmp_path, GOOD_RULE))
    assert [r.id for r in rules] == ["arith-add-to-sub"]
    assert rules[0].family == "arithmetic" and rules[0].evasion is Evasion.OTHER


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (("id: arith-add-to-sub", "id: Arith_Add"), r"rule 'Arith_Add': id: id 'Arith_Add' is not kebab-case"),
        (("evasion: other", "evasion: luck"), r"rule 'arith-add-to-sub': evasion: Input should be"),
        (("fix: $A - $B", "fix: $A - $C"), r"rule 'arith-add-to-sub': fix uses \$C, which the rule does not bind"),
        (("rule: {pattern: $A + $B}", "rule: {patern: $A + $B}"), r"rule 'arith-add-to-sub': ast-grep rejects the rule: unknown field `patern`"),
        (("rule: {pattern: $A + $B}", "rule: {kind: no_such_kind, pattern: $A + $B}"), r"rule 'arith-add-to-sub': ast-grep rejects the rule: .*Kind `no_such_kind` is invalid"),
        (('message: "`a + b` becomes `a - b`"', "message: ''"), r"rule 'arith-add-to-sub': message: message must be one non-empty line"),
        (("    fix: $A - $B\n", "    fix: $A - $B\n    colour: red\n"), r"rule 'arith-add-to-sub': colour: Extra inputs are not permitted"),
        (("      valid: ['// a + b']\n", ""), r"rule 'arith-add-to-sub': tests.valid: Field required"),
        (("evasion: other", "evasion: other\n    family: boundary"), r"rule 'arith-add-to-sub': family 'boundary' differs from the file's 'arithmetic'"),
    ],
    ids=["not-kebab", "bad-evasion", "unbound-fix", "unknown-rule-key", "bad-kind", "empty-message",
         "extra-key", "missing-valid-tests", "family-mismatch"],
)
def test_malformed_rule_names_file_rule_and_reason(tmp_path, edit, match):
    """Each malformed rule raises RuleFileError whose message starts with the file path."""
    old, new = edit
    assert old in GOOD_RULE
    path = _write(tmp_path, GOOD_RULE.replace(old, new))
    with pytest.raises(RuleFileError, match=match) as info:
        load_rule_file(path)
    assert str(info.value).startswith(str(path) + ": rule ")
    assert info.value.path == str(path) and info.value.reason


def test_duplicate_id_in_a_file(tmp_path):
    path = _write(tmp_path, GOOD_RULE + GOOD_RULE)
    with pytest.raises(RuleFileError, match=r"rule 'arith-add-to-sub': duplicate rule id"):
        load_rule_file(path)


def test_file_named_after_another_family(tmp_path):
    path = _write(tmp_path, GOOD_RULE, name="boundary.yml")
    with pytest.raises(RuleFileError, match=r"boundary\.yml: file of family 'arithmetic' must be named arithmetic\.yml"):
        load_rule_file(path)


def test_unknown_family_and_bad_yaml(tmp_path):
    with pytest.raises(RuleFileError, match=r"family 'maths' is not one of arithmetic"):
        load_rule_file(_write(tmp_path, GOOD_RULE, family="maths"))
    bad = tmp_path / "indexing.yml"
    bad.write_text("family: indexing\nrules: [\n")
    with pytest.raises(RuleFileError, match=r"indexing\.yml: not valid YAML"):
        load_rule_file(bad)


def test_duplicate_id_across_files(tmp_path):
    _write(tmp_path, GOOD_RULE)
    other = GOOD_RULE.replace("$A + $B}", "$A * $B}").replace("a + b;", "a * b;")
    (tmp_path / "precision.yml").write_text("family: precision\nrules:\n" + other)
    with pytest.raises(RuleFileError, match=r"precision\.yml: rule 'arith-add-to-sub': duplicate rule id \(also in .*arithmetic\.yml\)"):
        load_rules(tmp_path)


def test_shipped_rule_files():
    """Every family has its own file in the installed `rules/` package, and all of them load."""
    names = {p.name for p in rules_dir().glob("*.yml")}
    assert names == {f"{f}.yml" for f in FAMILIES}
    rules = load_rules()
    assert len(rules) >= 40


def test_json_schema_file_is_current():
    """`rules/rule-file.schema.json` is what `python -m mutagym.mutants.rule_schema` prints."""
    import json

    from mutagym.mutants.rule_schema import rule_json_schema

    shipped = json.loads((rules_dir() / "rule-file.schema.json").read_text())
    assert shipped == rule_json_schema(), "regenerate: python -m mutagym.mutants.rule_schema > rules/rule-file.schema.json"
