"""The pool of record a prescreen judges against: every valid input we own for a problem, plus
the kill signatures of its mutants (which inputs kill which mutant) to name the nearest one.

Where a problem's pool comes from, in order:

1. a pool file written from a kill matrix (`pools_from_killmatrix` + `save_pools`); the one built
   from the whole catalog ships as `configs/pools/catalog.json.gz` and is the default;
2. otherwise the validity gate itself over the kill matrix's candidate set drawn as the pool
   draws it (`killmatrix.candidate_inputs` with `POOL_PRESET_GENERATORS`: every generator x shape
   preset x seed 0, `large_reduction` with eight), kept when every correct kernel passes it in both schedules. This has no
   mutant signatures, so `nearest_mutant` is None; the result is cached on disk by the content of
   the problem's folder and the generators, so it is computed once per machine.

A pool file is gzip JSON: `{"format", "killmatrix_hash", "schedules", "problems": {id: {"inputs":
[input ids], "comparator": {...}, "mutants": [[id, rule, family, [indices of killing inputs]]],
"envelopes": {input id: {"atol", "rtol", "used": {output: share}}}}}}`; the envelopes (of the
pool's inputs and its coverage inputs) are written by `envs.envelopes.measure_pool_envelopes`.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..rewards.checker import CheckerVersion, ComparatorSpec, InputRef
from ..mutants.killmatrix import KillMatrixSettings, candidate_inputs
from ..rewards.generators import dims_preset, parse_input_id
from ..rewards.shapes import COSTLY_CLASSES, SHAPE_SEEDS, corners  # noqa: F401 - re-exported
from ..rewards.judging import comparator_for
from ..rewards.validity import check_validity
from ..substrates.catalog import Problem, load_problem

__all__ = ["COSTLY_CLASSES", "FORMAT", "MutantSignature", "POOL_PRESET_GENERATORS", "PoolRegistry", "ProblemPool",
           "default_pool_file", "gated_pool", "load_pools", "pools_from_killmatrix", "save_pools",
           "CORNER_ORDERS", "corner_inputs", "coverage_inputs", "write_pool_doc"]

FORMAT = "mutagym.pool-of-record/1"
#: The schedules a pool judges under (the kill matrix's defaults).
SCHEDULES = ("ascending", "descending")
#: The generators the pool of record draws a fixed preset with; a preset not named takes every
#: generator. The kill matrix draws the costly presets with fewer (`killmatrix.PRESET_GENERATORS`:
#: the families some mutant needs as its last witness, which saves mutant runs), but the pool is
#: run by correct kernels and submissions only, and a family no mutant needs may still catch what
#: a policy writes; `coverage_inputs` adds back what the matrix leaves out. `large_reduction`
#: (about a million elements an input, run by every reward) keeps the eight families whose faults
#: need a long reduction to show: accumulated rounding and overflow (uniform01, large_offset,
#: large_magnitude, monotone), cancellation (tiny_variance), peaks (peaked_logits), zeros past a
#: clamped loop (sparse) and the dense default (sign_mixed).
POOL_PRESET_GENERATORS = {"large_reduction": ("large_magnitude", "large_offset", "monotone", "peaked_logits",
                                              "sign_mixed", "sparse", "tiny_variance", "uniform01")}


@dataclass(frozen=True)
class MutantSignature:
    """A mutant of the kill matrix reduced to what a prescreen compares with: the valid inputs
    that kill it (in any schedule)."""

    id: str
    rule: str
    family: str
    kills: frozenset[str]


@dataclass(frozen=True)
class ProblemPool:
    """One problem's pool of record: inputs, the problem's own comparator, mutant signatures."""

    problem: str
    inputs: tuple[InputRef, ...]
    comparator: ComparatorSpec
    schedules: tuple[str, ...] = SCHEDULES
    mutants: tuple[MutantSignature, ...] = ()
    origin: str = ""
    input_ids: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_ids", tuple(r.id_for(self.problem) for r in self.inputs))

    def checker(self) -> CheckerVersion:
        """The pool as a checker version (what each prescreen run judges with)."""
        return CheckerVersion(name="pool-of-record", description=f"every valid input of {self.problem}",
                              source="envs.pool", suites={self.problem: list(self.inputs)},
                              comparator=self.comparator, provenance={"origin": self.origin})

    def nearest_mutant(self, failing: Iterable[str]) -> dict | None:
        """The mutant whose kill signature is closest (Jaccard) to the inputs a kernel fails.

        None when the kernel fails nothing or the pool has no signatures. Ties go to the mutant
        id that sorts first, so the answer is deterministic.

        >>> pool = ProblemPool("relu", (), ComparatorSpec(atol=0, rtol=0), mutants=(
        ...     MutantSignature("m1", "drop-relu", "input_domain", frozenset({"a", "b"})),
        ...     MutantSignature("m2", "off-by-one", "boundary", frozenset({"c"}))))
        >>> pool.nearest_mutant({"a"})["rule"], pool.nearest_mutant(set())
        ('drop-relu', None)
        """
        failing = frozenset(failing)
        if not failing or not self.mutants:
            return None

        def similarity(m: MutantSignature) -> float:
            union = len(failing | m.kills)
            return len(failing & m.kills) / union if union else 0.0

        best = min(self.mutants, key=lambda m: (-similarity(m), m.id))
        return {"mutant": best.id, "rule": best.rule, "family": best.family,
                "similarity": round(similarity(best), 6)}


# ------------------------------------------------------------------------- from a kill matrix
def pools_from_killmatrix(km) -> dict[str, ProblemPool]:
    """Every problem's pool from a kill matrix (`rewards.scoring.KillMatrix` or its folder)."""
    from ..rewards.scoring import load_killmatrix
    km = km if hasattr(km, "valid_inputs") else load_killmatrix(km)
    schedules = tuple(km.manifest.get("settings", {}).get("schedules") or SCHEDULES)
    origin = f"killmatrix:{km.content_hash()[:16]}"
    pools = {}
    for problem, ids in sorted(km.valid_inputs.items()):
        valid = set(ids)
        mutants = tuple(MutantSignature(m["mutant_id"], m["rule"] or "", m["family"] or "",
                                        frozenset(w for w in (m["witnesses"] or []) if w in valid))
                        for m in sorted(km.mutants, key=lambda m: m["mutant_id"])
                        if m["problem"] == problem and m["witnessed"])
        c = comparator_for(load_problem(problem))
        pools[problem] = ProblemPool(problem, tuple(_ref(i) for i in ids),
                                     ComparatorSpec(atol=c.atol, rtol=c.rtol, matched_ratio=c.matched_ratio),
                                     schedules, mutants, origin)
    return pools


def _ref(input_id: str) -> InputRef:
    _, generator, preset, seed = parse_input_id(input_id)
    return InputRef(generator=generator, preset=preset, seed=seed)


def save_pools(pools: Mapping[str, ProblemPool], path: str | os.PathLike) -> Path:
    """Write `pools` as one gzip JSON file (deterministic bytes: no timestamps, sorted keys)."""
    origins = sorted({p.origin for p in pools.values()})
    doc = {"format": FORMAT, "origin": origins[0] if len(origins) == 1 else origins,
           "problems": {pid: _pool_doc(p) for pid, p in sorted(pools.items())}}
    return write_pool_doc(path, doc)


def write_pool_doc(path: str | os.PathLike, doc: dict) -> Path:
    """Write a pool file's document (deterministic gzip JSON), replacing the file atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)
    os.replace(tmp, path)
    return path


def _pool_doc(p: ProblemPool) -> dict:
    index = {iid: k for k, iid in enumerate(p.input_ids)}
    return {"inputs": list(p.input_ids), "comparator": p.comparator.model_dump(), "schedules": list(p.schedules),
            "origin": p.origin,
            "mutants": [[m.id, m.rule, m.family, sorted(index[i] for i in m.kills)] for m in p.mutants]}


def load_pools(path: str | os.PathLike) -> dict[str, ProblemPool]:
    """Read a pool file written by `save_pools`; a malformed one raises ValueError naming it."""
    path = Path(path)
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()))
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}, expected {FORMAT!r}")
        pools = {}
        for pid, d in doc["problems"].items():
            ids = d["inputs"]
            mutants = tuple(MutantSignature(mid, rule, family, frozenset(ids[k] for k in kills))
                            for mid, rule, family, kills in d["mutants"])
            pools[pid] = ProblemPool(pid, tuple(_ref(i) for i in ids), ComparatorSpec(**d["comparator"]),
                                     tuple(d["schedules"]), mutants, d.get("origin", ""))
        return pools
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"pool file {str(path)!r} cannot be read: {err}") from err


def default_pool_file() -> Path | None:
    """The pool file shipped with mutagym (built from the whole catalog's kill matrix), if any."""
    path = Path(str(resources.files("mutagym.configs") / "pools" / "catalog.json.gz"))
    return path if path.is_file() else None


# ------------------------------------------------------------------------- from the validity gate
def _gate_key(problem: Problem, schedules: tuple[str, ...]) -> str:
    """What a gated pool depends on: the problem's folder, the schedules, and the code that makes
    its candidates (generators, shape classes, the kill matrix's candidate list)."""
    from ..mutants import killmatrix
    from ..rewards import generators, shapes
    h = hashlib.sha256(json.dumps([FORMAT, problem.id, list(schedules)]).encode())
    for path in sorted(Path(problem.folder).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.name.encode())
            h.update(path.read_bytes())
    for module in (generators, shapes, killmatrix):
        h.update(Path(module.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def gated_pool(problem: str | Problem, *, backend: str = "cpu",
               schedules: tuple[str, ...] = SCHEDULES) -> ProblemPool:
    """The pool of a problem no pool file covers: every candidate input of a default kill matrix,
    its presets drawn as `POOL_PRESET_GENERATORS` says (each generator x each shape preset, seed 0,
    and the cheap shape classes), that every correct kernel passes in every schedule. Cached on
    disk."""
    from ..runtime.toolchain import cache_dir
    p = problem if isinstance(problem, Problem) else load_problem(problem)
    cache = cache_dir() / "pools" / f"{p.id}-{_gate_key(p, schedules)}.json.gz"
    if cache.is_file():
        try:
            return load_pools(cache)[p.id]
        except (ValueError, KeyError):
            cache.unlink(missing_ok=True)    # a torn or stale file: compute again
    candidates = candidate_inputs(p, KillMatrixSettings(schedules=schedules,
                                                        preset_generators=dict(POOL_PRESET_GENERATORS)))
    verdicts = check_validity(p, candidates, backend=backend, schedules=schedules)
    c = comparator_for(p)
    valid = [InputRef(generator=g.generator, preset=g.preset, seed=g.seed)
             for g, v in sorted(zip(candidates, verdicts), key=lambda gv: gv[0].id) if v.valid]
    pool = ProblemPool(p.id, tuple(valid), ComparatorSpec(atol=c.atol, rtol=c.rtol,
                                                          matched_ratio=c.matched_ratio),
                       tuple(schedules), (), "validity-gate")
    save_pools({p.id: pool}, cache)
    return pool


# ------------------------------------------------------------------------- shape classes
#: The ordinary dense-random generator a shape class's pool input is drawn with.
SHAPE_GENERATOR = "sign_mixed"


def coverage_inputs(problem: str | Problem, *, backend: str = "cpu",
                    schedules: tuple[str, ...] = SCHEDULES) -> tuple[InputRef, ...]:
    """What the pool of record gains beyond the kill matrix's inputs: one input per cheap shape
    class of the problem (its `shapes.representative_seed` instance among `SHAPE_SEEDS` seeds,
    ordinary values), one per value family that applies to it (the official shape), and each
    (generator, fixed preset) that `POOL_PRESET_GENERATORS` draws and the kill matrix's
    `PRESET_GENERATORS` leaves out, each kept when every correct kernel passes it in every schedule.
    Cached on disk."""
    from ..rewards import generators, shapes
    from ..runtime.toolchain import cache_dir
    p = problem if isinstance(problem, Problem) else load_problem(problem)
    key = _gate_key(p, schedules)
    cache = cache_dir() / "pools" / f"{p.id}-coverage-{key}.json"
    if cache.is_file():
        return tuple(InputRef(**d) for d in json.loads(cache.read_text()))
    refs = []
    for cls in shapes.shape_classes(p):
        if cls in COSTLY_CLASSES:
            continue
        seed = shapes.representative_seed(p, cls, range(SHAPE_SEEDS))
        if seed is not None:
            refs.append(InputRef(generator=SHAPE_GENERATOR, preset=f"@{cls}", seed=seed))
    refs += [InputRef(generator=family, preset="official") for family in generators.families_for(p)]
    refs += _left_out_by_the_matrix(p)
    made = [r.generate(p) for r in refs]
    verdicts = check_validity(p, made, backend=backend, schedules=schedules)
    valid = tuple(r for r, v in zip(refs, verdicts) if v.valid)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([r.model_dump() for r in valid]))
    os.replace(tmp, cache)
    return valid


def _left_out_by_the_matrix(p: Problem) -> list[InputRef]:
    """The (generator, fixed preset) inputs, seed 0, the pool draws and the kill matrix does not."""
    from ..mutants.killmatrix import PRESET_GENERATORS, preset_draws
    from ..rewards.generators import GENERATORS
    return [InputRef(generator=g, preset=pr) for g in GENERATORS for pr in p.preset_names
            if preset_draws(POOL_PRESET_GENERATORS, pr, g) and not preset_draws(PRESET_GENERATORS, pr, g)]


# ------------------------------------------------------------------------- corners
#: The orders a corner runs in: a corner is about size (an index, a count, a grid past its limit),
#: which one order shows; the fixed stages have already run every order on smaller inputs.
CORNER_ORDERS = ("ascending",)


def corner_inputs(problem: str | Problem) -> list[InputRef]:
    """One ordinary input (`SHAPE_GENERATOR`, seed 0) at each corner of the problem's declared
    domain (`rewards.shapes.corners`), in its order: the gate runs one of them per evaluation."""
    p = problem if isinstance(problem, Problem) else load_problem(problem)
    return [InputRef(generator=SHAPE_GENERATOR, preset=dims_preset(dims)) for dims in corners(p).values()]


class PoolRegistry:
    """Pools by problem: from a pool file (or a kill-matrix folder) when it covers the problem,
    else the validity gate; either way with one input per cheap shape class and per value family
    added (`coverage_inputs`)."""

    def __init__(self, pool_file: str | os.PathLike | None = None, *, backend: str = "cpu"):
        path = Path(pool_file) if pool_file else default_pool_file()
        self.pool_file = path
        if path is None:
            self._pools: dict[str, ProblemPool] = {}
        elif path.is_dir():
            self._pools = pools_from_killmatrix(path)
        else:
            self._pools = load_pools(path)
        self.backend = backend
        self._with_shapes: dict[str, ProblemPool] = {}

    def get(self, problem: str) -> ProblemPool:
        if problem not in self._with_shapes:
            base = self._pools.get(problem) or gated_pool(problem, backend=self.backend)
            known = set(base.inputs)
            extra = tuple(r for r in coverage_inputs(problem, backend=self.backend, schedules=base.schedules)
                          if r not in known)
            self._with_shapes[problem] = dataclasses.replace(base, inputs=base.inputs + extra)
        return self._with_shapes[problem]
