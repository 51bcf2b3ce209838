"""Checker versions: a frozen, content-hashed input suite + comparator, and the verdicts they give.

A checker (docs/architecture.md, "Words") is an input suite and a comparator. A `CheckerVersion`
holds a default suite (`inputs`) plus per-problem suites (`suites`, what `mutagym harden`
produces), a default comparator plus per-problem comparators, and a free `provenance` dict
(kill-matrix hash, settings, date). The four presets in `configs/checkers/*.toml` reproduce published protocols:

| preset | inputs (official shape) | atol = rtol | matched ratio |
| --- | --- | --- | --- |
| `kernelbench` | 5 x `uniform01` | 1e-2 | 1 |
| `kernelbench-verified` | 5 x each of `uniform01`, `scaled_x3`, `scaled_x0_01`, `negated` | 1e-3 | 1 |
| `sol-execbench` | 10 x `identity_affine` | 1e-2 | 0.99 |
| `fuzz` | 5 x `uniform01` + 5 x `large_magnitude` | 1e-2 | 1 |

Content hash: sha256 of the canonical JSON (sorted keys, no whitespace) of every field, except
the provenance keys in `VOLATILE_PROVENANCE` (`date`): the hash names *what the checker is*
(its suites, tolerances, names and how it was produced), so re-running the same harden on another
day gives the same hash, and any other change gives a new one. Inputs are kept in suite order (the
order verdicts are reported in), so reordering a suite is a change. `save(dir)` writes
`<name>-<hash12>.json` with the hash inside; `load_checker` verifies it.

>>> kb = load_checker("kernelbench")
>>> [r.id_for("relu") for r in kb.inputs_for("relu")][:2]
['relu:uniform01:official:0', 'relu:uniform01:official:1']
>>> kb.comparator_for("relu")
Comparator(atol=0.01, rtol=0.01, matched_ratio=1.0, nan_matches=False)
>>> load_checker("kernelbench").content_hash() == kb.content_hash()
True
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..substrates.catalog import Problem, load_problem
from .comparator import Comparator
from .generators import ALL_GENERATORS, GeneratedInput
from .moves import make_input, split_moves
from .input_cache import InputCache
from .envelope import EnvelopeSet
from .judging import OK, WRONG, CaseJudgement, build_fault, judge_kernel, judge_result, shared_cache

__all__ = ["CheckerError", "CheckerVersion", "ComparatorSpec", "InputRef", "InputVerdict",
           "UnknownCheckerError", "VOLATILE_PROVENANCE", "Verdict", "crossed", "default_checker",
           "default_checker_name", "evaluate", "evaluate_kernel", "evaluate_source",
           "evaluate_source_schedules", "list_checkers", "load_checker"]

#: Provenance keys left out of the content hash (they change between identical runs).
VOLATILE_PROVENANCE: tuple[str, ...] = ("date",)
#: The `format` field of a saved checker version.
FORMAT = "mutagym.checker/1"
#: The file in `configs/checkers` that names the default checker.
DEFAULT_FILE = "DEFAULT"


class CheckerError(ValueError):
    """A checker file or preset is malformed, or a saved file's hash does not match its content."""


class UnknownCheckerError(LookupError):
    """No preset of that name and no file at that path."""

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0]) if self.args else ""


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------

class InputRef(BaseModel):
    """One input of a suite, problem-independent: generator + shape preset + seed.

    `generator` is a name in `ALL_GENERATORS` (the kill matrix's generators and the value
    families), or `name*scale` for a scaled copy (`sign_mixed*300`,
    what `scale_inputs` makes for the validity ceiling), the scale spelled as `scale_inputs`
    spells it.

    >>> InputRef(generator="sign_mixed", preset="tiny", seed=3).id_for("relu")
    'relu:sign_mixed:tiny:3'
    >>> InputRef(generator="large_magnitude*1e16").generator
    'large_magnitude*1e+16'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    generator: str
    preset: str = "official"
    seed: int = 0

    @field_validator("generator")
    @classmethod
    def _known_generator(cls, name: str) -> str:
        moved, _ = split_moves(name)
        base, _, scale = moved.partition("*")
        if base not in ALL_GENERATORS:
            close = difflib.get_close_matches(base, list(ALL_GENERATORS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown generator {base!r}{hint} Known: {', '.join(ALL_GENERATORS)}")
        if scale:
            try:
                # spelled as `scale_inputs` writes it, so the id is the one the arrays carry
                # (`large_magnitude*1e16` is `large_magnitude*1e+16` in every table)
                return f"{base}*{float(scale):g}"
            except ValueError:
                raise ValueError(f"generator {name!r}: scale {scale!r} is not a number") from None
        return name

    def id_for(self, problem: str | Problem) -> str:
        """The input id `problem:generator:preset:seed`."""
        return f"{_problem_id(problem)}:{self.generator}:{self.preset}:{self.seed}"

    def generate(self, problem: Problem) -> GeneratedInput:
        """The concrete arrays of this input for `problem`."""
        return make_input(problem, self.generator, self.preset, self.seed)


class ComparatorSpec(BaseModel):
    """The comparator's settings as data (`Comparator` is the rule that applies them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)
    matched_ratio: float = Field(default=1.0, gt=0, le=1)
    nan_matches: bool = False

    def comparator(self) -> Comparator:
        return Comparator(atol=self.atol, rtol=self.rtol, matched_ratio=self.matched_ratio,
                          nan_matches=self.nan_matches)


def _problem_id(problem: str | Problem) -> str:
    return problem if isinstance(problem, str) else problem.id


class CheckerVersion(BaseModel):
    """A frozen checker: default suite and comparator, per-problem overrides, provenance.

    `inputs_for(problem)` is `suites[problem]` if present, else `inputs`; `comparator_for(problem)`
    likewise with `comparators` and `comparator`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    source: str = ""
    inputs: list[InputRef] = Field(default_factory=list)
    suites: dict[str, list[InputRef]] = Field(default_factory=dict)
    comparator: ComparatorSpec
    comparators: dict[str, ComparatorSpec] = Field(default_factory=dict)
    provenance: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if any(c in name for c in "/\\:*?\"<>| ") or name.startswith("."):
            raise ValueError(f"checker name {name!r} must be usable in a file name "
                             "(no spaces, slashes or :*?\"<>|)")
        return name

    @model_validator(mode="after")
    def _some_inputs(self) -> "CheckerVersion":
        if not self.inputs and not self.suites:
            raise ValueError(f"checker {self.name!r} has no inputs: give a default `inputs` suite "
                             "or per-problem `suites`")
        try:
            json.dumps(self.provenance, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"checker {self.name!r}: provenance must be plain JSON ({err})") from None
        return self

    # -- lookups ---------------------------------------------------------------------------
    def inputs_for(self, problem: str | Problem) -> list[InputRef]:
        """The suite that judges `problem`: its own, or the default inputs whose shape the problem
        has (a problem added after a hardened checker was built has no `large_reduction` preset
        or shape class of another problem to draw)."""
        pid = _problem_id(problem)
        if pid in self.suites:
            return list(self.suites[pid])
        from .shapes import shape_classes
        p = problem if isinstance(problem, Problem) else load_problem(pid)
        shapes = set(p.preset_names) | {f"@{c}" for c in shape_classes(p)}
        return [r for r in self.inputs if r.preset in shapes]

    def comparator_for(self, problem: str | Problem) -> Comparator:
        """The comparator that judges `problem` (its own, or the default)."""
        return self.comparators.get(_problem_id(problem), self.comparator).comparator()

    def input_ids_for(self, problem: str | Problem) -> list[str]:
        """`inputs_for(problem)` as input ids (the kill matrix's `inputs.id`)."""
        return [r.id_for(problem) for r in self.inputs_for(problem)]

    # -- hashing and files -----------------------------------------------------------------
    def canonical(self) -> dict[str, Any]:
        """The hashed content: every field, provenance without `VOLATILE_PROVENANCE` keys."""
        data = self.model_dump(mode="json")
        data["provenance"] = {k: v for k, v in data["provenance"].items() if k not in VOLATILE_PROVENANCE}
        return data

    def content_hash(self) -> str:
        """sha256 (hex) of the canonical JSON of `canonical()`; stable for identical content.

        >>> c = load_checker("kernelbench")
        >>> c.model_copy(update={"provenance": {"date": "2026-11-29"}}).content_hash() == c.content_hash()
        True
        """
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def version_id(self) -> str:
        """`<name>-<hash12>`: the saved file's stem and the name verdicts carry."""
        return f"{self.name}-{self.content_hash()[:12]}"

    def save(self, directory: str | os.PathLike) -> Path:
        """Write `<directory>/<name>-<hash12>.json` (creating the folder) and return its path."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.version_id}.json"
        body = {"format": FORMAT, "content_hash": self.content_hash(), **self.model_dump(mode="json")}
        path.write_text(json.dumps(body, indent=2, sort_keys=False) + "\n")
        return path


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------

def _presets_dir():
    return resources.files("mutagym.configs") / "checkers"


def list_checkers() -> list[str]:
    """Names of the checkers shipped in `configs/checkers` (presets `.toml`, hardened `.json`), sorted.

    >>> [n for n in list_checkers() if not n.startswith("hardened")]
    ['fuzz', 'kernelbench', 'kernelbench-verified', 'sol-execbench']
    """
    return sorted(p.name.rsplit(".", 1)[0] for p in _presets_dir().iterdir()
                  if p.name.endswith((".toml", ".json")))


def default_checker_name() -> str:
    """The name of the checker used wherever none is given: the one `configs/checkers/DEFAULT`
    names (the committed hardened checker built from the whole catalog)."""
    return (_presets_dir() / DEFAULT_FILE).read_text().strip()


def default_checker() -> CheckerVersion:
    """The checker used wherever none is given (`load_checker("default")` is the same)."""
    return load_checker(default_checker_name())


def _expand(entries: Any, where: str) -> list[dict[str, Any]]:
    """TOML `[[inputs]]` entries (with `seeds = [...]` or `seed = n`) as one dict per input."""
    if not isinstance(entries, list):
        raise CheckerError(f"{where}: expected a list of input tables, got {entries!r}")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise CheckerError(f"{where}[{i}]: expected a table, got {entry!r}")
        entry = dict(entry)
        if "seeds" in entry:
            if "seed" in entry:
                raise CheckerError(f"{where}[{i}]: give `seed` or `seeds`, not both")
            seeds = entry.pop("seeds")
            if not isinstance(seeds, list) or not seeds:
                raise CheckerError(f"{where}[{i}]: `seeds` must be a non-empty list, got {seeds!r}")
            out.extend({**entry, "seed": s} for s in seeds)
        else:
            out.append(entry)
    return out


def checker_from_toml(text: str, origin: str = "<string>") -> CheckerVersion:
    """Parse a preset TOML: name, description, source, `[[inputs]]` (generator, preset, seeds),
    `[comparator]`, optional `[suites]` / `[comparators]` keyed by problem id, `[provenance]`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CheckerError(f"{origin}: not valid TOML: {err}") from None
    if "inputs" in data:
        data["inputs"] = _expand(data["inputs"], f"{origin}: inputs")
    if "suites" in data:
        data["suites"] = {p: _expand(v, f"{origin}: suites.{p}") for p, v in data["suites"].items()}
    return _validate(data, origin)


def _validate(data: Mapping[str, Any], origin: str) -> CheckerVersion:
    from pydantic import ValidationError
    try:
        return CheckerVersion.model_validate(data)
    except ValidationError as err:
        lines = [f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in err.errors()]
        raise CheckerError(f"{origin}: invalid checker: " + "; ".join(lines)) from None


def load_checker(name_or_path: str | os.PathLike) -> CheckerVersion:
    """A preset by name (`configs/checkers/<name>.toml`) or a checker file (`.json` or `.toml`).

    A saved JSON's `content_hash` must match its content (else `CheckerError`). An unknown name
    raises `UnknownCheckerError` with a "did you mean" and the known presets.

    >>> load_checker("kernelbnch")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mutagym.rewards.checker.UnknownCheckerError: unknown checker 'kernelbnch'; did you mean 'kernelbench'? ...
    """
    text_name = os.fspath(name_or_path)
    if text_name == "default":
        return default_checker()
    path = Path(text_name).expanduser()
    looks_like_path = (isinstance(name_or_path, os.PathLike) or "/" in text_name or os.sep in text_name
                       or text_name.endswith((".json", ".toml")))
    if not looks_like_path:
        preset = _presets_dir() / f"{text_name}.toml"
        if preset.is_file():
            return checker_from_toml(preset.read_text(), f"preset {text_name!r}")
        shipped = _presets_dir() / f"{text_name}.json"
        if shipped.is_file():
            return load_checker(Path(str(shipped)))
        if not path.is_file():
            known = list_checkers()
            close = difflib.get_close_matches(text_name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownCheckerError(f"unknown checker {text_name!r}{hint} Known checkers: "
                                      f"{', '.join(known)} (or give the path of a .json / .toml "
                                      "checker file)")
    if not path.is_file():
        raise UnknownCheckerError(f"no checker file at {text_name!r}; known checkers: "
                                  f"{', '.join(list_checkers())}")
    if path.suffix == ".toml":
        return checker_from_toml(path.read_text(), str(path))
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise CheckerError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise CheckerError(f"{path}: expected a JSON object, got {type(data).__name__}")
    fmt = data.pop("format", FORMAT)
    if fmt != FORMAT:
        raise CheckerError(f"{path}: format {fmt!r} is not {FORMAT!r}")
    stored = data.pop("content_hash", None)
    checker = _validate(data, str(path))
    if stored is not None and stored != checker.content_hash():
        raise CheckerError(f"{path}: content_hash {stored[:12]}... does not match the content "
                           f"({checker.content_hash()[:12]}...): the file was edited after saving")
    return checker


def crossed(inputs_from: CheckerVersion, comparator_from: CheckerVersion) -> CheckerVersion:
    """A checker with `inputs_from`'s suites and `comparator_from`'s comparators (for attribution).

    >>> kb, kbv = load_checker("kernelbench"), load_checker("kernelbench-verified")
    >>> x = crossed(kbv, kb)
    >>> x.name, len(x.inputs_for("relu")), x.comparator_for("relu").atol
    ('kernelbench-verified+kernelbench-tol', 20, 0.01)
    """
    return CheckerVersion(
        name=f"{inputs_from.name}+{comparator_from.name}-tol",
        description=f"inputs of {inputs_from.version_id}, comparators of {comparator_from.version_id}",
        source="crossed checker (attribution)",
        inputs=inputs_from.inputs, suites=inputs_from.suites,
        comparator=comparator_from.comparator, comparators=comparator_from.comparators,
        provenance={"inputs_from": inputs_from.version_id, "comparator_from": comparator_from.version_id})


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputVerdict:
    """One input's result: `outcome` is one of `judging.OUTCOMES` (`ok`, `wrong`, `memory_fault`,
    ...), `passed` whether it is `ok`; errors are the worst over the outputs."""

    input_id: str
    passed: bool
    outcome: str = "ok"
    max_abs: float = 0.0
    max_rel: float = 0.0
    mismatch_ratio: float = 0.0
    message: str = ""
    envelope_used: float | None = None


@dataclass(frozen=True)
class Verdict:
    """A checker's judgement of one kernel on one problem.

    `outcome` is one of `judging.OUTCOMES`: `ok` (accepted), the first kernel fault in suite
    order (`launch_error`, `memory_fault`, `sync_error`, `data_race`, `stateful_kernel`, `timeout`,
    `crash`, `forbidden_syscall`: a fault outranks a wrong answer), else `wrong`; `source_error` or `compile_error` when it did not
    build. `inputs` has one `InputVerdict` per suite input, in suite order; `message` explains the
    first failure. `built` is False when the kernel never ran (it did not build, or its launch
    plan was refused before any input): then every input carries that fault and none is a
    witness of it.
    """

    accepted: bool
    outcome: str
    checker: str
    problem: str
    inputs: list[InputVerdict] = field(default_factory=list)
    message: str = ""
    built: bool = True


def _judge(checker: CheckerVersion, problem: Problem, generated: Sequence[GeneratedInput],
           results: Sequence[Any], references: Sequence[Mapping[str, np.ndarray]] | None = None) -> Verdict:
    """The verdict on finished runs (`RunResult`s or outputs mappings), one per suite input."""
    comparator = checker.comparator_for(problem)
    store = shared_cache()
    cases = [judge_result(g.id, "", result, references[k] if references is not None else store.reference(problem, g),
                          comparator) for k, (g, result) in enumerate(zip(generated, results))]
    return _verdict(checker, problem, cases)


def _verdict(checker: CheckerVersion, problem: Problem, cases: Sequence[CaseJudgement]) -> Verdict:
    """A fault outranks a wrong answer; the first of either, in suite order, names the outcome."""
    per_input = [InputVerdict(c.input_id, c.passed, c.outcome, c.max_abs, c.max_rel, c.mismatch_ratio, c.message,
                              c.envelope_used)
                 for c in cases]
    faults = [v for v in per_input if v.outcome not in (OK, WRONG)]
    wrong = [v for v in per_input if v.outcome == WRONG]
    first = (faults or wrong or [None])[0]
    outcome = first.outcome if first else OK
    message = f"input {first.input_id}: {first.message}" if first else ""
    return Verdict(outcome == OK, outcome, checker.version_id, problem.id, per_input, message)


def _problem(problem: str | Problem) -> Problem:
    return load_problem(problem) if isinstance(problem, str) else problem


def evaluate(checker: CheckerVersion, problem: str | Problem,
             run_fn: Callable[[GeneratedInput], Any]) -> Verdict:
    """Judge a kernel on `problem` with `checker`, whatever runs it.

    `run_fn(g)` gets each suite input as a `GeneratedInput` (its `id`, `generator`, `preset`,
    `seed`, `dims` and arrays) and returns the kernel's outputs as `{name: array}`, or a
    `RunResult` (a run that did not finish gives its outcome). Outputs are compared with the fp64
    reference under `checker.comparator_for(problem)`.

    >>> p = load_problem("relu")
    >>> evaluate(load_checker("kernelbench"), p, lambda g: {"out": np.maximum(g.inputs["x"], 0)}).accepted
    True
    >>> v = evaluate(load_checker("kernelbench-verified"), p, lambda g: {"out": g.inputs["x"]})
    >>> v.accepted, v.outcome, v.message[:37]
    (False, 'wrong', 'input relu:negated:official:0: output')
    """
    p = _problem(problem)
    generated = [ref.generate(p) for ref in checker.inputs_for(p)]
    return _judge(checker, p, generated, [run_fn(g) for g in generated])


def evaluate_source(checker: CheckerVersion, problem: str | Problem, source: str, *,
                    backend: str = "cpu", schedule: str = "ascending",
                    timeout_s: float = 30.0, suite: Sequence[InputRef] | None = None,
                    cache: InputCache | None = None) -> Verdict:
    """Compile a submission and judge it on every suite input of `problem` in one `run_batch`.

    `suite` replaces the checker's suite for this call (fresh seeds of the same generators and
    shapes); `cache` keeps generated inputs and their references between calls. A submission
    that does not build gives `outcome="compile_error"` (not accepted) with the compiler's
    message; a launch plan the runtime refuses for an input, `launch_error`; infrastructure
    failures raise `InfrastructureError`.
    """
    return evaluate_source_schedules(checker, problem, source, (schedule,), backend=backend,
                                     timeout_s=timeout_s, suite=suite, cache=cache)[schedule]


def evaluate_source_schedules(checker: CheckerVersion, problem: str | Problem, source: str,
                              schedules: Sequence[str], *, backend: str = "cpu", timeout_s: float = 30.0,
                              suite: Sequence[InputRef] | None = None, cache: InputCache | None = None,
                              envelopes: EnvelopeSet | None = None) -> dict[str, Verdict]:
    """`evaluate_source` under each of `schedules` (thread orders), one verdict each: the kernel
    is built once and the inputs laid out once for all of them. With `envelopes`, an input that
    has one is also judged against it (`rewards.envelope`)."""
    from ..runtime import SubmissionError, compile

    p = _problem(problem)
    refs = list(suite) if suite is not None else checker.inputs_for(p)
    try:
        kernel = compile(source, backend=backend)
    except SubmissionError as err:
        fault = build_fault(err)
        return {s: _failed_everywhere(checker, p, refs, fault, f"{fault}: {err}") for s in schedules}
    return evaluate_kernel(checker, p, kernel, refs, schedules, timeout_s=timeout_s, cache=cache,
                           envelopes=envelopes)


def evaluate_kernel(checker: CheckerVersion, problem: Problem, kernel, refs: Sequence[InputRef],
                    schedules: Sequence[str], *, timeout_s: float = 30.0,
                    cache: InputCache | None = None, envelopes: EnvelopeSet | None = None) -> dict[str, Verdict]:
    """Judge a built kernel on `refs` under each schedule with `checker`'s comparator for
    `problem` (`judging.judge_kernel`), one verdict per schedule."""
    store = cache if cache is not None else shared_cache()
    made = [store.get(problem, r) for r in refs]
    checks = None if envelopes is None else [envelopes.check_for(g.id) for g, _ in made]
    judged = judge_kernel(kernel, problem, [g for g, _ in made], checker.comparator_for(problem), schedules,
                          timeout_s=timeout_s, references=[ref for _, ref in made], envelopes=checks)
    return {s: _verdict(checker, problem, cases) for s, cases in judged.items()}


def _failed_everywhere(checker: CheckerVersion, problem: Problem, refs: Sequence[InputRef],
                       outcome: str, message: str) -> Verdict:
    per_input = [InputVerdict(r.id_for(problem), False, outcome, float("inf"), float("inf"), 1.0, "")
                 for r in refs]
    return Verdict(False, outcome, checker.version_id, problem.id, per_input, message, built=False)
