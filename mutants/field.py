"""Field faults in hardening (`mutagym harden --field DIR`): what policies wrote, beside what our
rules make.

A field-fault set (`rewards.field_faults`) feeds the pipeline twice. Its wrong kernels become a
second fault population of the kill matrix (`MutantRecord`s of population and family `field`, the
set's `kind` as their rule), and each one's witness joins its problem's candidate inputs, so the
validity gate decides on it as on any input and the set cover may choose it. Its correct kernels
are more kernels a checker must not reject: `field_false_rejects` judges them with a checker, and
`gate_false_rejects` with the reward gate as far as the kill matrix holds it (the hardened suite,
then every valid input of the matrix at the problem's tolerance in the matrix's thread orders).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..rewards.checker import CheckerVersion, ComparatorSpec, InputRef, evaluate_source_schedules
from ..rewards.field_faults import FieldKernel, load_field_set
from ..rewards.generators import parse_input_id
from ..rewards.judging import comparator_for
from ..rewards.scoring import FalseReject, KillMatrix
from ..substrates.catalog import load_problem
from .killmatrix import MutantRecord

__all__ = ["FieldFaults", "field_false_rejects", "field_id", "gate_false_rejects", "load_field_faults"]


def field_id(kernel: FieldKernel) -> str:
    """The kill-matrix id of a field fault: problem and text hash (never a mutant id's 16 hex digits)."""
    return f"field-{kernel.problem}-{kernel.source_sha256[:12]}"


@dataclass(frozen=True)
class FieldFaults:
    """The kernels of field-fault sets, of the problems a run covers, each text once per problem."""

    sets: tuple[str, ...]
    wrong: tuple[FieldKernel, ...]
    correct: tuple[FieldKernel, ...]

    @property
    def records(self) -> list[MutantRecord]:
        """The wrong kernels as the kill matrix's records (population `field`)."""
        return [MutantRecord(field_id(k), k.problem, "field", k.kind, k.source, population="field")
                for k in self.wrong]

    @property
    def witnesses(self) -> dict[str, list[str]]:
        """problem -> the wrong kernels' witness ids (extra candidate inputs of the kill matrix)."""
        out: dict[str, list[str]] = {}
        for k in self.wrong:
            out.setdefault(k.problem, []).append(k.witness)
        return {p: sorted(set(ids)) for p, ids in sorted(out.items())}


def load_field_faults(folders: Iterable[str | os.PathLike], problems: Sequence[str]) -> FieldFaults:
    """The field-fault sets in `folders`, kept to `problems`; the first set naming a text for a
    problem wins, and a text both wrong and correct for one problem raises ValueError naming both files."""
    keep, folders = set(problems), [str(f) for f in folders]
    chosen: dict[tuple[str, str], tuple[str, FieldKernel]] = {}
    for folder in folders:
        for k in load_field_set(folder):
            key = (k.source_sha256, k.problem)
            if k.problem not in keep:
                continue
            if key in chosen:
                where, first = chosen[key]
                if first.expected != k.expected:
                    raise ValueError(f"field kernel {folder}/{k.file} is {k.expected} for {k.problem}, "
                                     f"but the same text {where}/{first.file} is {first.expected}")
                continue
            chosen[key] = (folder, k)
    kernels = [k for _, k in chosen.values()]
    return FieldFaults(tuple(folders), tuple(k for k in kernels if k.expected == "wrong"),
                       tuple(k for k in kernels if k.expected == "correct"))


def _judge_all(kernels: Iterable[FieldKernel], stages, backend: str) -> list[FalseReject]:
    """Each kernel rejected by one of its problem's `stages(problem)`, `(checker, suite or None,
    schedules)` each, in order: its first failing verdict."""
    rejects = []
    for k in kernels:
        for checker, suite, schedules in stages(k.problem):
            verdicts = evaluate_source_schedules(checker, k.problem, k.source, schedules, backend=backend,
                                                 suite=suite)
            failed = next((v for v in verdicts.values() if not v.accepted), None)
            if failed is not None:
                rejects.append(FalseReject(k.problem, k.file, failed.outcome, failed.message))
                break
    return rejects


def field_false_rejects(checker: CheckerVersion, kernels: Iterable[FieldKernel], *,
                        backend: str = "cpu") -> list[FalseReject]:
    """The correct field kernels `checker` rejects (its suite, ascending order, as it judges)."""
    return _judge_all(kernels, lambda p: [(checker, None, ("ascending",))], backend)


def gate_false_rejects(hardened: CheckerVersion, km: KillMatrix, kernels: Iterable[FieldKernel], *,
                       backend: str = "cpu") -> list[FalseReject]:
    """The correct field kernels the reward gate rejects as far as `km` holds it: the hardened
    suite, then the pool (every valid input of the matrix, at the problem's tolerance, in the
    matrix's thread orders)."""
    schedules = tuple(km.manifest.get("settings", {}).get("schedules") or ("ascending", "descending"))

    def stages(problem: str):
        c = comparator_for(load_problem(problem))
        pool = [InputRef(generator=g, preset=pr, seed=s)
                for _, g, pr, s in map(parse_input_id, km.valid_inputs.get(problem, []))]
        out = [(hardened, None, ("ascending",))]
        if pool:
            out.append((CheckerVersion(name="pool-of-record", suites={problem: pool},
                                       comparator=ComparatorSpec(atol=c.atol, rtol=c.rtol,
                                                                 matched_ratio=c.matched_ratio,
                                                                 nan_matches=c.nan_matches)),
                        None, schedules))
        return out
    return _judge_all(kernels, stages, backend)
