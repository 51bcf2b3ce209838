"""Mutation rules as data: the pydantic schema of `rules/<family>.yml` and its loader.

A rule file holds one fault family. Each rule is an ast-grep rule (a `pattern` with
metavariables, narrowed by `kind`/`inside`/`has`/`not` and per-metavariable `constraints`) plus a
`fix` template that reuses the metavariables, a one-line `message`, the reason official tests
miss the fault (`evasion`) and its own test cases::

    family: arithmetic
    rules:
      - id: arith-add-to-sub              # kebab-case, unique across all files
        message: "`a + b` becomes `a - b`"
        evasion: other
        rule: {pattern: $A + $B}          # ast-grep rule object
        fix: $A - $B                      # $NAME / $$$NAME refer to the rule's metavariables
        tests:
          invalid:                        # must fire; `fixed` is the rewrite at each site
            - {code: "float f(float a, float b) { return a + b; }",
               fixed: "float f(float a, float b) { return a - b; }"}
          valid:                          # must not fire
            - "// a + b"

A bad file raises `RuleFileError`, whose message names the file, the rule id and the reason.

>>> rules = load_rules()
>>> sorted({r.family for r in rules}) == sorted(FAMILIES)
True
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "FAMILIES",
    "RuleFile",
    "rule_json_schema",
    "Evasion",
    "RuleCase",
    "RuleFileError",
    "RuleSpec",
    "RuleTests",
    "load_rule_file",
    "load_rules",
    "rules_dir",
]

#: The fault families, in report order. A rule file is named after its family.
FAMILIES: tuple[str, ...] = (
    "arithmetic",
    "indexing",
    "synchronization",
    "precision",
    "boundary",
    "input_domain",
    "idiom",
    "pipeline",
)

ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: `$$$NAME` (a list of nodes) or `$NAME` (one node) in a pattern or a fix template.
METAVAR_RE = re.compile(r"\$\$\$([A-Z_][A-Z0-9_]*)|\$([A-Z_][A-Z0-9_]*)")


class Evasion(str, Enum):
    """Why the official tests miss a fault of this rule (the paper's appendix B mechanisms)."""

    INPUT_DOMAIN = "input-domain-evasion"   # the inputs' support hides it (ReLU on [0, 1))
    TOLERANCE = "tolerance-absorption"      # the error stays below atol + rtol * |ref|
    SHAPE = "shape-alignment"               # official shapes are multiples of the tile / block
    BENIGN_RACE = "benign-race"             # a race that similar lane values or schedules mask
    OTHER = "other"


class RuleCase(BaseModel):
    """One snippet on which the rule must fire, with the rewritten snippet at each site."""

    model_config = ConfigDict(extra="forbid")

    code: str
    #: The whole snippet after the rewrite: one string when the rule fires at exactly one site,
    #: or one string per site in source order.
    fixed: str | list[str]

    def expected(self) -> list[str]:
        return [self.fixed] if isinstance(self.fixed, str) else list(self.fixed)


class RuleTests(BaseModel):
    """ast-grep's test layout: `invalid` code must be reported, `valid` code must not."""

    model_config = ConfigDict(extra="forbid")

    invalid: list[RuleCase] = Field(min_length=1)
    valid: list[str] = Field(min_length=1)


class RuleSpec(BaseModel):
    """One deterministic structural rewrite of CUDA source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    family: str
    #: One line that reads on its own: what the rewrite does.
    message: str
    #: The longer explanation (optional).
    note: str = ""
    evasion: Evasion
    #: What the rule rewrites: the CUDA code (`kernel`), or each string expression of the launch
    #: block's `grid = [...]` / `block = [...]` arrays (`grid`, `block`), parsed as a C expression.
    #: A fix there may use the launch language's `//` floor division.
    target: Literal["kernel", "grid", "block"] = "kernel"
    #: An ast-grep rule object (`pattern`, `kind`, `regex`, `inside`, `has`, `not`, `all`, `any`...).
    rule: dict[str, Any]
    #: Per-metavariable narrowing, as in ast-grep (`{A: {regex: "^tid$"}}`).
    constraints: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: ast-grep transforms (`replace`, `substring`, `convert`); their names can be used in `fix`.
    transform: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: Named helper rules for `matches:` (a file's top-level `utils` are merged in by the loader).
    utils: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: Replacement of the matched node; `$NAME` and `$$$NAME` insert the matched source text.
    fix: str
    tests: RuleTests

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        if not ID_RE.match(v):
            raise ValueError(f"id {v!r} is not kebab-case (lower-case words joined by '-')")
        return v

    @field_validator("family")
    @classmethod
    def _family(cls, v: str) -> str:
        if v not in FAMILIES:
            raise ValueError(f"family {v!r} is not one of {', '.join(FAMILIES)}")
        return v

    @field_validator("message")
    @classmethod
    def _one_line(cls, v: str) -> str:
        v = v.strip()
        if not v or "\n" in v:
            raise ValueError("message must be one non-empty line")
        return v

    @model_validator(mode="after")
    def _fix_uses_bound_metavariables(self) -> "RuleSpec":
        bound = set(self.transform)
        for text in _strings(self.rule):
            bound.update(a or b for a, b in METAVAR_RE.findall(text))
        used = {a or b for a, b in METAVAR_RE.findall(self.fix)}
        unbound = sorted(used - bound)
        if unbound:
            raise ValueError(f"fix uses ${', $'.join(unbound)}, which the rule does not bind")
        unknown = sorted(set(self.constraints) - bound)
        if unknown:
            raise ValueError(f"constraints name ${', $'.join(unknown)}, which the rule does not bind")
        return self

    def config(self) -> dict[str, Any]:
        """The ast-grep config dict for `SgNode.find_all`."""
        cfg: dict[str, Any] = {"rule": self.rule}
        if self.constraints:
            cfg["constraints"] = self.constraints
        if self.transform:
            cfg["transform"] = self.transform
        if self.utils:
            cfg["utils"] = self.utils
        return cfg


class RuleFile(BaseModel):
    """A whole `rules/<family>.yml` file (used for the JSON schema; `load_rule_file` validates
    rule by rule so that an error names its rule)."""

    model_config = ConfigDict(extra="forbid")

    family: Literal[FAMILIES]  # type: ignore[valid-type]
    #: Named helper rules shared by every rule of the file (`matches: <name>`).
    utils: dict[str, dict[str, Any]] = Field(default_factory=dict)
    rules: list[RuleSpec] = Field(min_length=1)


def rule_json_schema() -> dict[str, Any]:
    """The JSON schema of a rule file, for editors (`rules/rule-file.schema.json`).

    A rule inside a file may leave out `family` and `utils`: the loader fills them in from the file.

    >>> rule_json_schema()["$defs"]["RuleSpec"]["required"]
    ['id', 'message', 'evasion', 'rule', 'fix', 'tests']
    """
    schema = RuleFile.model_json_schema()
    spec = schema["$defs"]["RuleSpec"]
    spec["required"] = [k for k in spec["required"] if k != "family"]
    schema["title"] = "mutagym rule file"
    return schema


def _strings(obj: Any):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


class RuleFileError(ValueError):
    """A rule file is malformed: names the file, the rule id (when known) and the reason."""

    def __init__(self, path: Path | str, rule_id: str | None, reason: str):
        self.path = str(path)
        self.rule_id = rule_id
        self.reason = reason
        where = f"{self.path}: rule {rule_id!r}" if rule_id else self.path
        super().__init__(f"{where}: {reason}")


def rules_dir() -> Path:
    """The folder of the installed `mutagym.rules` package (one YAML file per family)."""
    from .. import rules

    return Path(rules.__file__).parent


def _check_compiles(spec: RuleSpec) -> None:
    """Run the rule on a tiny source so ast-grep rejects a bad pattern, kind or constraint now."""
    from ast_grep_py import SgRoot

    root = SgRoot("void f() { int a = 0; }", "cpp").root()
    try:
        root.find_all(spec.config())
    except BaseException as e:  # the binding raises plain Exception / ValueError / panics
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise ValueError(f"ast-grep rejects the rule: {_ast_grep_reason(e)}") from None


def _ast_grep_reason(e: BaseException) -> str:
    """ast-grep's error chain on one line, without the Rust backtrace."""
    text = str(e).split("Stack backtrace:")[0]
    lines = [re.sub(r"^\d+:\s*", "", ln.strip()) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and ln != "Caused by:"]
    return " ".join(lines) or type(e).__name__


def _reason(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def load_rule_file(path: Path | str) -> list[RuleSpec]:
    """Load and validate one family file; raise `RuleFileError` naming file, rule id and reason."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RuleFileError(path, None, f"not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise RuleFileError(path, None, "expected a mapping with `family` and `rules`")
    extra = sorted(set(data) - {"family", "rules", "utils"})
    if extra:
        raise RuleFileError(path, None, f"unknown top-level key(s): {', '.join(extra)}")
    family = data.get("family")
    if family not in FAMILIES:
        raise RuleFileError(path, None, f"family {family!r} is not one of {', '.join(FAMILIES)}")
    if path.stem != family:
        raise RuleFileError(path, None, f"file of family {family!r} must be named {family}.yml")
    raw_rules = data.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleFileError(path, None, "`rules` must be a non-empty list")
    utils = data.get("utils") or {}
    if not isinstance(utils, dict):
        raise RuleFileError(path, None, "`utils` must be a mapping of name -> rule")
    out: list[RuleSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_rules):
        rid = raw.get("id") if isinstance(raw, dict) else None
        label = rid if isinstance(rid, str) else f"#{i}"
        if not isinstance(raw, dict):
            raise RuleFileError(path, label, "a rule must be a mapping")
        raw = dict(raw)
        if raw.setdefault("family", family) != family:
            raise RuleFileError(path, label, f"family {raw['family']!r} differs from the file's {family!r}")
        if utils:
            raw["utils"] = {**utils, **(raw.get("utils") or {})}
        try:
            spec = RuleSpec.model_validate(raw)
            _check_compiles(spec)
        except ValidationError as e:
            raise RuleFileError(path, label, _reason(e)) from None
        except ValueError as e:
            raise RuleFileError(path, label, str(e)) from None
        if spec.id in seen:
            raise RuleFileError(path, spec.id, "duplicate rule id")
        seen.add(spec.id)
        out.append(spec)
    return out


_cache: dict[str, list[RuleSpec]] = {}


def load_rules(directory: Path | str | None = None, *, families: tuple[str, ...] | None = None) -> list[RuleSpec]:
    """Every rule of every family file under *directory* (default: the `rules/` package), in
    family order then file order. Rule ids must be unique across files.
    """
    directory = Path(directory) if directory is not None else rules_dir()
    key = str(directory.resolve())
    if key not in _cache:
        rules: list[RuleSpec] = []
        owner: dict[str, Path] = {}
        for fam in FAMILIES:
            path = directory / f"{fam}.yml"
            if not path.is_file():
                continue
            for spec in load_rule_file(path):
                if spec.id in owner:
                    raise RuleFileError(path, spec.id, f"duplicate rule id (also in {owner[spec.id]})")
                owner[spec.id] = path
                rules.append(spec)
        _cache[key] = rules
    rules = _cache[key]
    if families is not None:
        rules = [r for r in rules if r.family in families]
    return list(rules)


if __name__ == "__main__":  # python -m mutagym.mutants.rule_schema > rules/rule-file.schema.json
    import json

    print(json.dumps(rule_json_schema(), indent=2, sort_keys=True))
