"""The reward gate: every reward is decided by the strongest check mutagym owns.

A minimal set-cover suite is the paper's measure of a checker against single-site mutants; a
policy is not a mutant, it is an optimiser that finds every input the checker never tries. So the
reward is a gate of three stages, each in several thread orders, stopping at the first failure:

| stage | inputs | comparator | why |
| --- | --- | --- | --- |
| `suite` | the hardened checker's suite | the checker's (tolerances tightened where valid) | cheap: rejects most wrong kernels in a few runs |
| `pool` | the pool of record: every valid input of the kill matrix, plus one per cheap shape class and per value family and the generators the matrix leaves out of its costly presets (`pool.coverage_inputs`) | the problem's | the strongest fixed check |
| `fresh` | drawn anew at every evaluation (a trainer's batch shares one draw per problem) from a secret stream: each suite input's pattern (generator and shape) again, patterns of the pool, and shape classes (residues, block edges, sizes past a block or a grid cap) with value families (masked, ties, overflow, ...) | the problem's, every draw validity-gated | an input the policy cannot have seen |

Each stage runs under `SCHEDULES` (ascending, descending and a seeded shuffle of the threads and
blocks), so a missing barrier that one order hides shows in another. The reward is paid only
when every stage passes in every order. A `GateVerdict` names the stage, the order, and the
failing input's generator and shape, never the input itself; it also carries what the suite
alone, in ascending order (the plain checker), would have said, so the episode can report where
the checker by itself would have accepted a wrong kernel.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Protocol

from ..rewards.checker import CheckerVersion, InputRef, Verdict
from ..rewards import falsify as falsify_module, generators as generators_module
from ..rewards import moves as moves_module, shapes as shapes_module
from ..rewards.comparator import Comparator
from ..rewards.envelope import DEFAULT_RULE, EnvelopeRule, EnvelopeSet
from ..rewards.falsify import SearchBudget, SearchPlan
from ..rewards.generators import ALL_GENERATORS, ORDINARY_GENERATORS, families_for, parse_input_id
from ..rewards.generators import describe as describe_values
from ..rewards.shapes import SHAPE_CLASSES, corners, shape_classes
from ..rewards.shapes import describe as describe_shape
from ..runtime.errors import InfrastructureError
from ..substrates.catalog import Problem, load_problem
from .envelopes import EnvelopeStore
from .fresh_seeds import FreshSeedError, FreshSuites
from .pool import CORNER_ORDERS, PoolRegistry, corner_inputs

__all__ = ["FRESH_BATCH", "GATE_FORMAT", "GateFailure", "GateVerdict", "RewardGate", "SCHEDULES", "StageRunner",
           "default_contract"]

GATE_FORMAT = "mutagym.gate/1"
#: The thread orders every stage runs in, cheapest first (the checker's own order first).
SCHEDULES = ("ascending", "descending", "shuffled:1")
#: Patterns of the pool redrawn per evaluation, on top of one redraw of each suite input.
FRESH_POOL_PATTERNS = 4
#: Shape classes (`rewards.shapes`) drawn per evaluation, each with a value family or an
#: ordinary generator: residues, block edges, sizes past a block or a grid cap, tiny and large.
FRESH_SHAPE_PATTERNS = 2
#: Ordinary dense-random generators a shape class is paired with, besides the value families.
ORDINARY = ORDINARY_GENERATORS
#: What the falsification search of one kernel may spend (`rewards.falsify.SearchBudget`).
SEARCH_BUDGET = SearchBudget()
#: Fresh draws validity-gated at least per pattern whose ready draws ran out. Every draw an
#: evaluation (or a trainer's batch) needs is gated in one run of the correct kernels, so a larger
#: batch saves no run; it only gates draws ahead, which a short run never uses. Two keeps a spare
#: for a pattern whose draws are sometimes invalid (another round would be another run).
FRESH_BATCH = 2


@dataclass(frozen=True)
class GateVerdict:
    """The gate's judgement of one kernel on one problem.

    `verdict` is the deciding one: the first failing stage's, in the first failing order, or the
    last stage's when all pass. `stage` and `schedule` name where it failed (None when accepted);
    `failing` the first failing input's generator, shape preset and outcome. `checker_alone` is the
    suite's verdict in ascending order: what the plain checker would have paid for. `results` are
    the verdicts by order of every stage that ran, in stage order."""

    verdict: Verdict
    stage: str | None
    schedule: str | None
    failing: dict | None
    checker_alone: Verdict
    results: tuple[tuple[str, dict[str, Verdict]], ...]

    @property
    def stages_run(self) -> tuple[str, ...]:
        return tuple(stage for stage, _ in self.results)

    @property
    def accepted(self) -> bool:
        return self.verdict.accepted

    def info(self, gate_id: str) -> dict:
        """The JSON-able record of `info["gate"]`."""
        return {"version": gate_id, "accepted": self.accepted, "stage": self.stage,
                "schedule": self.schedule, "failing": dict(self.failing) if self.failing else None,
                "stages_run": list(self.stages_run),
                "checker_alone": {"checker": self.checker_alone.checker,
                                  "accepted": self.checker_alone.accepted,
                                  "false_accept": self.checker_alone.accepted and not self.accepted}}


@dataclass(frozen=True)
class Stage:
    """One stage of one problem: its name, the checker whose comparator judges it, its inputs
    (None: the checker's own suite) and their envelopes; a search stage's `search` plan (its
    inputs are where the search starts); the thread `orders` it runs in (None: the gate's)."""

    name: str
    checker: CheckerVersion
    refs: list[InputRef] | None
    envelopes: EnvelopeSet
    search: SearchPlan | None = None
    orders: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GateFailure:
    """A stage could not be judged (a worker timed out or failed, no fresh draw passed the
    validity gate): mutagym's failure, never the kernel's."""

    message: str


class StageRunner(Protocol):
    """Runs one stage of one kernel for the gate; where (here or on workers) is the runner's choice.

    `start` sends the runs of `source` for `stage` under every order of the gate and returns a
    handle at once; *split* asks for one call per order (one kernel's orders side by side).
    `result` waits for a handle: the verdicts by order, or a `GateFailure`."""

    def start(self, stage: Stage, problem: str, source: str, *, split: bool) -> Any: ...

    def result(self, handle: Any) -> "dict[str, Verdict] | GateFailure": ...


class RewardGate:
    """The stages of one gate: `checker` (stage 1), the pools (stage 2) and fresh draws (stage 3,
    from `fresh`, a `FreshSuites` whose secret makes the draws unpredictable and reproducible;
    None for a gate that only states its contract). Every input of every stage is also judged
    against its envelope under `rule` (`rewards.envelope`): the pool file's, else measured in the
    gate's orders and kept (`envelopes.EnvelopeStore`)."""

    def __init__(self, checker: CheckerVersion, pools: PoolRegistry, fresh: FreshSuites | None,
                 schedules: Sequence[str] = SCHEDULES, rule: EnvelopeRule = DEFAULT_RULE):
        self.checker, self.pools, self.fresh, self.rule = checker, pools, fresh, rule
        self.schedules = tuple(schedules)
        self._unusable: set[tuple[str, tuple[str, str]]] = set()   # shape patterns no draw passes
        self._corner_turns: dict[str, int] = {}

    @functools.cached_property
    def envelopes(self) -> EnvelopeStore:
        return EnvelopeStore(self.pools.pool_file, backend=self.pools.backend, schedules=self.schedules,
                             rule=self.rule)

    @functools.cached_property
    def version_id(self) -> str:
        """`gate-<hash12>` over the checker version, the pool file (its envelopes with it), the code
        that draws shapes and values (the pool's coverage inputs and the fresh draws), the orders,
        the draw counts, the envelope rule and the search (its budget and code)."""
        pool_file = self.pools.pool_file
        pool_hash = hashlib.sha256(pool_file.read_bytes()).hexdigest()[:16] if pool_file else "validity-gate"
        spec = [GATE_FORMAT, self.checker.version_id, pool_hash, _code_hash(shapes_module, generators_module), list(self.schedules),
                FRESH_POOL_PATTERNS, FRESH_SHAPE_PATTERNS, list(ORDINARY), self.rule.as_dict(),
                SEARCH_BUDGET.as_dict(), _code_hash(moves_module, falsify_module), list(CORNER_ORDERS)]
        return "gate-" + hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:12]

    def judge(self, items: Sequence[tuple[str, str]], runner: StageRunner) -> list["GateVerdict | GateFailure"]:
        """Every `(source, problem)` of `items` walked through the stages, stopping at its first
        failure: the suite for all of them, then the pool and fresh stages of those that passed
        it, every kernel's pool runs sent before the fresh draws are made; a kernel alone splits
        its orders. The later stages' runs of a kernel that failed are not waited for."""
        first = []
        for source, problem in items:
            try:
                first.append(runner.start(self.suite_stage(problem), problem, source, split=False))
            except InfrastructureError as err:
                first.append(GateFailure(f"the gate's suite stage: {err}"))
        results: dict[int, list[tuple[str, dict[str, Verdict]]]] = {}
        out: list[GateVerdict | GateFailure | None] = [None] * len(items)
        for k, handle in enumerate(first):
            verdicts = runner.result(handle)
            if isinstance(verdicts, GateFailure):
                out[k] = verdicts
            elif all(v.accepted for v in verdicts.values()):
                results[k] = [("suite", verdicts)]
            else:
                out[k] = self.decide([("suite", verdicts)])
        split = len(results) == 1
        later: dict[int, list[tuple[str, Any]]] = {k: [] for k in results}

        def send(k: int, stage) -> None:
            source, problem = items[k]
            if isinstance(stage, GateFailure):
                out[k] = stage
                del later[k]
                return
            later[k].append((stage.name, runner.start(stage, problem, source, split=split)))

        corner: dict[str, Stage | None] = {}     # one corner per problem of the batch
        for k in list(later):
            problem = items[k][1]
            try:
                send(k, self.pool_stage(problem))
                if problem not in corner:
                    corner[problem] = self.corner_stage(problem)
                if corner[problem] is not None and k in later:
                    send(k, corner[problem])
            except InfrastructureError as err:
                send(k, GateFailure(f"the gate's pool stage: {err}"))
        try:
            fresh = self.fresh_stages([items[k][1] for k in later])
        except (FreshSeedError, InfrastructureError) as err:
            fresh = [err] * len(later)
        for k, stage in zip(list(later), fresh):
            send(k, GateFailure(f"the gate's fresh stage: {stage}") if isinstance(stage, Exception) else stage)
        for k, runs in later.items():
            for name, handle in runs:
                verdicts = runner.result(handle)
                if isinstance(verdicts, GateFailure):
                    out[k] = verdicts
                    break
                results[k].append((name, verdicts))
                if not all(v.accepted for v in verdicts.values()):
                    break
        searched = {k: runner.start(self.search_stage(*items[k], results[k]), items[k][1], items[k][0], split=False)
                    for k in later if out[k] is None}
        for k, handle in searched.items():
            verdicts = runner.result(handle)
            if isinstance(verdicts, GateFailure):
                out[k] = verdicts
                continue
            results[k].append(("search", verdicts))
            out[k] = self.decide(results[k])
        return out

    def search_stage(self, source: str, problem: str, results: Sequence[tuple[str, dict[str, Verdict]]]) -> Stage:
        """The falsification search of a kernel that passed every fixed stage (`rewards.falsify`):
        it starts from the inputs where the kernel's error came closest to its envelope, and its
        seed comes from the gate's secret and the text, so the same kernel meets the same search
        under the same gate."""
        scores: dict[str, float] = {}
        for _, by_schedule in results:
            for verdict in by_schedule.values():
                for v in verdict.inputs:
                    scores[v.input_id] = max(scores.get(v.input_id, 0.0), v.envelope_used or 0.0)
        best = sorted(scores, key=lambda i: (-scores[i], i))[:SEARCH_BUDGET.parents]
        starts = [InputRef(generator=g, preset=pr, seed=sd) for _, g, pr, sd in map(parse_input_id, best)]
        text = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        seed = self.fresh.seed_for("search", problem, text) if self.fresh is not None else int(text[:15], 16)
        pool = self.pools.get(problem).checker()
        return Stage("search", pool, starts, EnvelopeSet(self.rule), SearchPlan(seed, SEARCH_BUDGET))

    def decide(self, stage_results: Sequence[tuple[str, dict[str, Verdict]]]) -> GateVerdict:
        """The verdict from each run stage's verdicts by order, in stage order: the first failing
        stage and order decides; all passing accepts. The checker alone is the suite's first order."""
        checker_alone = stage_results[0][1][self.schedules[0]]
        run = tuple(stage_results)
        last = None
        for stage, by_schedule in stage_results:
            for schedule in (s for s in self.schedules if s in by_schedule):
                verdict = last = by_schedule[schedule]
                if not verdict.accepted:
                    first = next((v for v in verdict.inputs if not v.passed), None)
                    failing = None
                    if first is not None:
                        _, generator, preset, _ = parse_input_id(first.input_id)
                        failing = {"generator": generator, "shape": preset, "outcome": first.outcome}
                    return GateVerdict(verdict, stage, schedule, failing, checker_alone, run)
        return GateVerdict(last, None, None, None, checker_alone, run)

    def suite_stage(self, problem: str) -> Stage:
        """The hardened checker's own suite."""
        return Stage("suite", self.checker, None, self.envelopes.envelopes(problem, self.checker.inputs_for(problem)))

    @functools.cached_property
    def corner_envelopes(self) -> EnvelopeStore:
        return EnvelopeStore(self.pools.pool_file, backend=self.pools.backend, schedules=CORNER_ORDERS,
                             rule=self.rule)

    def corner_stage(self, problem: str) -> Stage | None:
        """One corner of the declared domain (`pool.corner_inputs`: each dim at its least size,
        each at its declared maximum, a tensor past 2**24 elements), the next one of the problem's
        rotation at every call, in `CORNER_ORDERS`: every corner is tried once in as many
        evaluations as the problem has corners (at most 2 + its dims). None when no corner is
        valid."""
        valid = self.corner_envelopes.valid(problem, corner_inputs(problem))
        if not valid:
            return None
        turn = self._corner_turns.get(problem, 0)
        self._corner_turns[problem] = turn + 1
        ref = valid[turn % len(valid)]
        pool = self.pools.get(problem).checker()
        return Stage("corner", pool, [ref], self.corner_envelopes.envelopes(problem, [ref]), orders=CORNER_ORDERS)

    def pool_stage(self, problem: str) -> Stage:
        """The pool of record, judged at the problem's tolerance."""
        pool = self.pools.get(problem).checker()
        refs = pool.inputs_for(problem)
        return Stage("pool", pool, refs, self.envelopes.envelopes(problem, refs))

    def fresh_stages(self, problems: Sequence[str]) -> list[Stage | FreshSeedError]:
        """The fresh stage of each entry of `problems` (a trainer's batch names a problem once per
        kernel), drawn anew at every call (see `fresh_inputs`). Kernels of one batch for the same
        problem share its draws: none of them can have seen the draws, and a GRPO group is then
        compared on the same hidden cases; the draws of one call are validity-gated in one run of
        the correct kernels per problem. An entry whose suite or pool pattern found no valid draw
        is a `FreshSeedError` (mutagym's failure)."""
        distinct = list(dict.fromkeys(problems))
        plans = [self._fresh_plan(problem) for problem in distinct]
        requests = []
        for problem, (pool, patterns, shapes) in zip(distinct, plans):
            requests.append((pool, problem, patterns, None))
            requests += [(pool, problem, [shape], 1) for shape in shapes]
        drawn = iter(self.fresh.redraw_many(requests))
        stage_of: dict[str, Any] = {}
        for problem, (pool, patterns, shapes) in zip(distinct, plans):
            inputs = next(drawn)
            for shape in shapes:
                [r] = next(drawn)
                if r is None:    # no valid draw of this pattern: never offer it again
                    self._unusable.add((problem, (shape.generator, shape.preset)))
                else:
                    inputs.append(r)
            lost = next((ref for ref, r in zip(patterns, inputs) if r is None), None)
            measured = {r.id_for(load_problem(problem)): e for r in inputs if r is not None
                        and (e := self.fresh.take_envelope(problem, r)) is not None}
            stage_of[problem] = Stage("fresh", pool, inputs, self.envelopes.envelopes(
                problem, inputs, measured)) if lost is None else FreshSeedError(
                f"problem {problem!r}: no fresh {lost.generator}/{lost.preset} input passed the validity "
                f"gate in {self.fresh.max_rounds} rounds of draws")
        return [stage_of[problem] for problem in problems]

    def fresh_inputs(self, problem: str) -> list[InputRef]:
        """Fresh, validity-gated draws, each judged at the problem's tolerance: one of each suite
        input's pattern (a redraw keeps the generator and shape that made the fixed input a
        witness; the fixed inputs stay in stage 1), `FRESH_POOL_PATTERNS` patterns of the pool, and
        `FRESH_SHAPE_PATTERNS` shape classes, each with a value family or an ordinary generator
        (both chosen by the secret stream)."""
        [stage] = self.fresh_stages([problem])
        if isinstance(stage, FreshSeedError):
            raise stage
        return stage.refs

    def _fresh_plan(self, problem: str) -> tuple[CheckerVersion, list[InputRef], list[InputRef]]:
        """(the pool's checker, the patterns to redraw, the shape-class patterns) of one evaluation."""
        pool = self.pools.get(problem).checker()
        patterns = {(r.generator, r.preset): r for r in self.checker.inputs_for(problem)}
        pool_patterns = sorted({(r.generator, r.preset) for r in pool.inputs_for(problem)} - set(patterns))
        for pick in self.fresh.pick(problem, pool_patterns, FRESH_POOL_PATTERNS):
            patterns[pick] = InputRef(generator=pick[0], preset=pick[1])
        usable = [p for p in _shape_patterns(problem) if (problem, p) not in self._unusable]
        shapes = [InputRef(generator=g, preset=shape)
                  for g, shape in self.fresh.pick(problem, usable, FRESH_SHAPE_PATTERNS)]
        return pool, list(patterns.values()), shapes

    def contract(self, problem: str) -> dict:
        """What is judged, as the prompt and `info` state it: the comparator of each stage, every
        shape and every value recipe an input of any stage can have (name -> what a policy reads
        of it: `rewards.shapes.describe`, `rewards.generators.describe`), and the thread orders.

        The shapes and values are those of the suite's and the pool's inputs (the fresh stage
        redraws their patterns) and of the fresh stage's shape patterns (`_shape_patterns`);
        fixed presets first, then classes, each in its table's order. `envelope` is the rule every
        output is also held to, `search` what the falsification search may do to those inputs."""
        suite = self.checker.inputs_for(problem)
        pool = self.pools.get(problem).checker()
        refs = [*suite, *pool.inputs_for(problem)]
        p = load_problem(problem)
        patterns = _shape_patterns(problem)
        shapes = {r.preset for r in refs} | {c for _, c in patterns}
        values = {r.generator for r in refs} | {g for g, _ in patterns}
        pool_c = _comparator_terms(pool.comparator_for(problem))
        return {"gate": self.version_id,
                "tolerance": {"suite": _comparator_terms(self.checker.comparator_for(problem)),
                              "pool": pool_c, "fresh": dict(pool_c)},
                "shapes": {s: describe_shape(p, s) for s in sorted(shapes, key=lambda s: _shape_order(p, s))},
                "values": {g: describe_values(p, g) for g in sorted(values, key=_value_order)},
                "thread_orders": list(self.schedules),
                "envelope": self.rule.as_dict(),
                "corners": {name: dims for name, dims in corners(p).items()},
                "search": {"moves": {", ".join(names): text for text, names in moves_module.moves_by_text(p).items()},
                           "max_elements": SEARCH_BUDGET.max_elements, "candidates": SEARCH_BUDGET.candidates,
                           "sweep_elements": SEARCH_BUDGET.sweep_elements}}


def _code_hash(*modules) -> str:
    """The hash of the modules' source: what they decide is part of a gate's version."""
    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in modules)).hexdigest()[:16]


@functools.lru_cache(maxsize=256)
def _shape_patterns(problem: str) -> list[tuple[str, str]]:
    """(generator, `@<shape class>`) pairs the fresh stage draws from for `problem`."""
    p = load_problem(problem)
    return [(g, f"@{c}") for c in shape_classes(p) for g in (*ORDINARY, *families_for(p))]


def _comparator_terms(c: Comparator) -> dict:
    """A comparator as the contract states it."""
    return {"atol": c.atol, "rtol": c.rtol, "matched_ratio": c.matched_ratio, "nan_matches": c.nan_matches}


def _shape_order(problem: Problem, shape: str) -> tuple:
    """Fixed presets in the problem's order, then classes in `SHAPE_CLASSES` order."""
    if shape.startswith("@"):
        return (1, list(SHAPE_CLASSES).index(shape[1:]), shape)
    names = list(problem.preset_names)
    return (0, names.index(shape) if shape in names else len(names), shape)


def _value_order(generator: str) -> tuple:
    """`ALL_GENERATORS` order, a scaled copy after its recipe."""
    base, _, scale = generator.partition("*")
    return (list(ALL_GENERATORS).index(base), float(scale) if scale else 0.0)


@functools.cache
def default_contract(problem: str) -> dict:
    """The contract of the gate every reward uses by default (the committed checker, the shipped
    pool): what `mutagym dataset` writes into the prompts."""
    from ..rewards.checker import default_checker
    return RewardGate(default_checker(), _default_pools(), None).contract(problem)


@functools.cache
def _default_pools() -> PoolRegistry:
    return PoolRegistry()
