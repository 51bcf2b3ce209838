"""Apply every rule at every site of every substrate: the mutant pool.

A mutant is a substrate with exactly one rule applied at one site. Its id is a stable hash of
what determines it: ``sha256(problem, sha256(substrate), rule id, site ordinal)[:16]``, so the same
catalog and rules give the same ids on every machine, and an edited substrate gives new ones.

Mutants whose source is identical to another mutant of the same problem are dropped, keeping the
one whose id sorts first; a rewrite that leaves the source unchanged never becomes a mutant.
The pool is ordered by problem, then family (in `FAMILIES` order), rule (file order), site.

>>> pool = generate_pool(["relu"])
>>> m = pool.mutants[0]
>>> (m.problem, len(m.id)) == ("relu", 16) and m.diff.startswith("--- relu/substrate.cu")
True
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from .engine import find_sites, apply_site
from .rule_schema import FAMILIES, RuleSpec, load_rules

__all__ = ["Mutant", "MutantPool", "generate_pool", "mutant_id", "mutants_for_source"]


@dataclass(frozen=True)
class Mutant:
    """One rule applied at one site of one substrate."""

    id: str
    problem: str
    rule: str
    family: str
    evasion: str
    message: str
    line: int                 # 1-based line of the rewritten site in the substrate
    site: int                 # 0-based ordinal among this rule's sites in the substrate
    start: int                # character span of the rewritten text in the substrate
    end: int
    substrate_sha256: str
    original: str             # the text the rule replaced
    replacement: str          # the text it put there
    source: str               # the whole mutated submission
    diff: str                 # unified diff substrate -> mutant

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class MutantPool:
    """The mutants of a generation run, plus what was dropped and why."""

    mutants: list[Mutant]
    #: dropped mutant id -> id of the kept mutant with the identical source
    duplicates: dict[str, str] = field(default_factory=dict)
    #: problem -> error text, for problems whose substrate could not be loaded
    skipped: dict[str, str] = field(default_factory=dict)

    def counts(self, by: str = "family") -> dict[str, int]:
        """Number of mutants per value of the attribute *by* (`family`, `rule`, `problem`)."""
        out: dict[str, int] = {}
        for m in self.mutants:
            key = getattr(m, by)
            out[key] = out.get(key, 0) + 1
        return out


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mutant_id(problem: str, substrate_sha256: str, rule_id: str, site: int) -> str:
    """The stable 16-hex-digit id of the mutant of *rule_id* at *site* of a substrate.

    >>> mutant_id("relu", "0" * 64, "arith-add-to-sub", 0) == mutant_id("relu", "0" * 64, "arith-add-to-sub", 0)
    True
    """
    key = "\x00".join([problem, substrate_sha256, rule_id, str(site)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _diff(problem: str, mid: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"{problem}/substrate.cu", tofile=f"{problem}/mutant-{mid}.cu", n=3))


def mutants_for_source(problem: str, source: str, rules: Sequence[RuleSpec]) -> tuple[list[Mutant], dict[str, str]]:
    """All mutants of one substrate *source* under *rules*, deduplicated; and the duplicates map."""
    sha = sha256_text(source)
    raw: list[Mutant] = []
    for rule in rules:
        for site in find_sites(source, rule):
            mid = mutant_id(problem, sha, rule.id, site.ordinal)
            mutated = apply_site(source, site)
            raw.append(Mutant(
                id=mid, problem=problem, rule=rule.id, family=rule.family, evasion=rule.evasion.value,
                message=rule.message, line=site.line, site=site.ordinal, start=site.start, end=site.end,
                substrate_sha256=sha,
                original=site.original, replacement=site.replacement, source=mutated,
                diff=_diff(problem, mid, source, mutated)))
    kept_by_source: dict[str, str] = {}
    duplicates: dict[str, str] = {}
    for m in sorted(raw, key=lambda m: m.id):
        if m.source in kept_by_source:
            duplicates[m.id] = kept_by_source[m.source]
        else:
            kept_by_source[m.source] = m.id
    return [m for m in raw if m.id not in duplicates], duplicates


def generate_pool(problems: Iterable[str] | None = None, rules: Sequence[RuleSpec] | None = None,
                  *, skip_broken: bool = False) -> MutantPool:
    """The mutant pool of *problems* (default: the whole catalog) under *rules* (default: all).

    With *skip_broken*, a problem whose folder fails to load is recorded in `skipped` instead of
    raising.
    """
    from ..substrates.catalog import list_problems, load_problem

    rules = list(rules) if rules is not None else load_rules()
    order = {f: i for i, f in enumerate(FAMILIES)}
    rules = sorted(rules, key=lambda r: order[r.family])  # stable: keeps file order in a family
    pool = MutantPool(mutants=[])
    for problem in sorted(set(problems) if problems is not None else list_problems()):
        try:
            source = load_problem(problem).kernel_sources()["substrate"]
        except Exception as e:  # a problem folder being edited, a missing variant file
            if not skip_broken:
                raise
            pool.skipped[problem] = str(e).splitlines()[0]
            continue
        mutants, dups = mutants_for_source(problem, source, rules)
        pool.mutants.extend(mutants)
        pool.duplicates.update(dups)
    return pool
