"""Every judging input's envelope (the correct kernels' error on it), measured once.

The gate judges each input of its suite, pool and fresh stages against its envelope as well as
the flat tolerance (`rewards.envelope`). An envelope is measured by running every correct kernel
of the problem on the input in every thread order of the gate (`rewards.validity`). Where one comes
from, in order:

1. the pool file: `measure_pool_envelopes` writes an envelope for every pool input into it, so
   the shipped pool's inputs cost nothing at judging time, and the envelopes are part of the bytes
   the gate's version hashes;
2. a disk cache (`cache_dir()/envelopes`) keyed by the problem's folder and the code that draws
   inputs, filled by the validity runs of inputs that have no envelope yet (a machine-gated pool,
   coverage inputs, a suite input outside the pool);
3. fresh draws: their own validity gate measures them (`fresh_seeds.FreshSuites.envelope`).

An input that a correct kernel fails in some order is kept as invalid (`null` in the files): it
has no envelope, and a stage that may only judge with valid inputs (the corners) leaves it out.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..rewards.checker import InputRef
from ..rewards.envelope import DEFAULT_RULE, EnvelopeRule, EnvelopeSet, InputEnvelope
from ..rewards.input_cache import InputCache
from ..rewards.judging import comparator_for
from ..rewards.validity import check_validity
from ..substrates.catalog import load_problem
from .pool import CORNER_ORDERS, FORMAT, PoolRegistry, _gate_key, corner_inputs, write_pool_doc

__all__ = ["EnvelopeStore", "measure_pool_envelopes", "read_pool_envelopes"]

#: Inputs measured per validity run when envelopes are missing (one compile of each correct kernel).
_BATCH = 64
#: What a cached envelope holds; 2: the slowest correct kernel's seconds beside the errors.
CACHE_FORMAT = 2


def read_pool_envelopes(path: str | os.PathLike | None) -> dict[str, dict[str, InputEnvelope | None]]:
    """The envelopes a pool file holds: problem -> input id -> envelope, None for an input found
    invalid ({} for a file without any)."""
    if path is None or Path(path).is_dir():
        return {}
    doc = json.loads(gzip.decompress(Path(path).read_bytes()))
    return {problem: _from_doc(d.get("envelopes", {})) for problem, d in doc["problems"].items()}


def _from_doc(doc: dict) -> dict[str, InputEnvelope | None]:
    return {i: None if e is None else InputEnvelope.from_dict(e) for i, e in doc.items()}


def _to_doc(envelopes: dict[str, InputEnvelope | None]) -> dict:
    return {i: None if e is None else e.as_dict() for i, e in sorted(envelopes.items())}


class EnvelopeStore:
    """Envelopes by problem and input id; missing ones are measured and cached on disk.

    `schedules` are the orders the envelopes are measured in: the gate's, so a correct kernel
    whose error depends on the order is measured in every order it is judged in."""

    def __init__(self, pool_file: str | os.PathLike | None, *, backend: str = "cpu",
                 schedules: Sequence[str], rule: EnvelopeRule = DEFAULT_RULE, cache: InputCache | None = None):
        self.rule, self.backend, self.schedules = rule, backend, tuple(schedules)
        self.cache = cache if cache is not None else InputCache()
        self._known = read_pool_envelopes(pool_file)
        self._cache_read: set[str] = set()

    def envelopes(self, problem: str, refs: Iterable[InputRef], extra: dict[str, InputEnvelope] | None = None
                  ) -> EnvelopeSet:
        """The envelopes of `refs` of `problem` (with `extra` ones known to the caller, such as
        fresh draws'), measuring those not known yet."""
        extra = extra or {}
        known = self.measured(problem, [r for r in refs if r.id_for(load_problem(problem)) not in extra])
        return EnvelopeSet(self.rule, {i: e for i, e in {**known, **extra}.items() if e is not None})

    def valid(self, problem: str, refs: Sequence[InputRef]) -> list[InputRef]:
        """Those of `refs` every correct kernel passes in `schedules` (measured once, then kept)."""
        known = self.measured(problem, refs)
        p = load_problem(problem)
        return [r for r in refs if known[r.id_for(p)] is not None]

    def measured(self, problem: str, refs: Iterable[InputRef]) -> dict[str, InputEnvelope | None]:
        """id -> envelope (None: invalid) of each of `refs`, measuring the unknown ones."""
        p = load_problem(problem)
        known = self._known.setdefault(problem, {})
        if problem not in self._cache_read:
            self._cache_read.add(problem)
            known.update(self._read_cache(problem))
        wanted = {r.id_for(p): r for r in refs}
        missing = [r for i, r in wanted.items() if i not in known]
        if missing:
            self._measure(problem, missing)
        return {i: known[i] for i in wanted}

    # ------------------------------------------------------------------ measuring
    def _measure(self, problem: str, refs: list[InputRef]) -> None:
        p = load_problem(problem)
        comparator = comparator_for(p)
        found: dict[str, InputEnvelope | None] = {}
        for start in range(0, len(refs), _BATCH):
            made = [self.cache.get(p, r) for r in refs[start:start + _BATCH]]
            verdicts = check_validity(p, [g for g, _ in made], comparator, backend=self.backend,
                                      schedules=self.schedules, references=[ref for _, ref in made])
            for (g, ref), v in zip(made, verdicts):
                found[g.id] = v.envelope(p, comparator, ref) if v.valid else None
        self._known.setdefault(problem, {}).update(found)
        self._write_cache(problem, found)

    def _cache_file(self, problem: str) -> Path:
        from ..runtime.toolchain import cache_dir
        key = _gate_key(load_problem(problem), self.schedules)
        return cache_dir() / "envelopes" / f"{problem}-{key}-{CACHE_FORMAT}.json"

    def _read_cache(self, problem: str) -> dict[str, InputEnvelope | None]:
        try:
            return _from_doc(json.loads(self._cache_file(problem).read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def _write_cache(self, problem: str, found: dict[str, InputEnvelope | None]) -> None:
        if not found:
            return
        path = self._cache_file(problem)
        merged = {**self._read_cache(problem), **found}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_to_doc(merged), sort_keys=True))
        os.replace(tmp, path)


def measure_pool_envelopes(path: str | os.PathLike, *, backend: str = "cpu", schedules: Sequence[str],
                           problems: Sequence[str] | None = None, progress=None) -> dict[str, int]:
    """Measure the envelope of every input the gate's pool stage judges with the pool file
    `path` (its inputs and the coverage inputs `PoolRegistry` adds; of `problems`, default all)
    in `schedules`, and of its corners (`pool.corner_inputs`, in `pool.CORNER_ORDERS`, the orders
    the gate runs them in), and write them into the file by input id (None for an invalid one);
    returns how many each problem has.
    A problem already holding every envelope, each with its time, is kept as it is, so an
    interrupted run resumes (and a file measured before envelopes had times is measured again).
    `progress(problem, done, total)` is called after each problem."""
    path = Path(path)
    doc = json.loads(gzip.decompress(path.read_bytes()))
    if doc.get("format") != FORMAT:
        raise ValueError(f"pool file {str(path)!r}: format {doc.get('format')!r}, expected {FORMAT!r}")
    registry = PoolRegistry(path, backend=backend)
    stores = ((EnvelopeStore(None, backend=backend, schedules=schedules), lambda problem: registry.get(problem).inputs),
              (EnvelopeStore(None, backend=backend, schedules=CORNER_ORDERS), corner_inputs))
    counts = {}
    chosen = sorted(problems or doc["problems"])
    for n, problem in enumerate(chosen, 1):
        entry = doc["problems"][problem]
        p = load_problem(problem)
        for store, inputs in stores:
            refs = inputs(problem)
            kept = {i for i, e in entry.get("envelopes", {}).items() if e is None or "seconds" in e}
            if not {r.id_for(p) for r in refs} <= kept:
                entry["envelopes"] = _to_doc({**_from_doc(entry.get("envelopes", {})),
                                              **store.measured(problem, refs)})
                write_pool_doc(path, doc)
        counts[problem] = len(entry["envelopes"])
        if progress is not None:
            progress(problem, n, len(chosen))
    return counts
