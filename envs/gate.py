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
from typing import Any

from ..rewards.checker import CheckerVersion, InputRef, Verdict
from ..rewards.comparator import Comparator
from ..rewards.generators import ALL_GENERATORS, ORDINARY_GENERATORS, families_for, parse_input_id
from ..rewards.generators import describe as describe_values
from ..rewards.shapes import SHAPE_CLASSES, shape_classes
from ..rewards.shapes import describe as describe_shape
from ..substrates.catalog import Problem, load_problem
from .fresh_seeds import FreshSeedError, FreshSuites
from .pool import PoolRegistry

__all__ = ["FRESH_BATCH", "GATE_FORMAT", "GateVerdict", "RewardGate", "SCHEDULES", "decide", "default_contract"]

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
    suite's verdict in ascending order: what the plain checker would have paid for."""

    verdict: Verdict
    stage: str | None
    schedule: str | None
    failing: dict | None
    checker_alone: Verdict
    stages_run: tuple[str, ...]

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


class RewardGate:
    """The stages of one gate: `checker` (stage 1), the pools (stage 2) and fresh draws (stage 3,
    from `fresh`, a `FreshSuites` whose secret makes the draws unpredictable and reproducible;
    None for a gate that only states its contract)."""

    def __init__(self, checker: CheckerVersion, pools: PoolRegistry, fresh: FreshSuites | None,
                 schedules: Sequence[str] = SCHEDULES):
        self.checker, self.pools, self.fresh = checker, pools, fresh
        self.schedules = tuple(schedules)
        self._unusable: set[tuple[str, tuple[str, str]]] = set()   # shape patterns no draw passes

    @functools.cached_property
    def version_id(self) -> str:
        """`gate-<hash12>` over the checker version, the pool file, the code that draws shapes and
        values (the pool's coverage inputs and the fresh draws), the orders and the draw counts."""
        pool_file = self.pools.pool_file
        pool_hash = hashlib.sha256(pool_file.read_bytes()).hexdigest()[:16] if pool_file else "validity-gate"
        from ..rewards import generators, shapes
        drawing = hashlib.sha256(Path(shapes.__file__).read_bytes() + Path(generators.__file__).read_bytes())
        spec = [GATE_FORMAT, self.checker.version_id, pool_hash, drawing.hexdigest()[:16], list(self.schedules),
                FRESH_POOL_PATTERNS, FRESH_SHAPE_PATTERNS, list(ORDINARY)]
        return "gate-" + hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:12]

    def pool_stage(self, problem: str) -> tuple[str, CheckerVersion, list[InputRef]]:
        """(stage, checker whose comparator judges it, inputs) of the pool of record."""
        pool = self.pools.get(problem).checker()
        return "pool", pool, pool.inputs_for(problem)

    def fresh_stages(self, problems: Sequence[str]) -> list[tuple[str, CheckerVersion, list[InputRef]] | FreshSeedError]:
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
            stage_of[problem] = ("fresh", pool, inputs) if lost is None else FreshSeedError(
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
        return stage[2]

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
        fixed presets first, then classes, each in its table's order."""
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
                "thread_orders": list(self.schedules)}


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


def decide(stage_results: Sequence[tuple[str, dict[str, Verdict]]], schedules: Sequence[str],
           checker_alone: Verdict) -> GateVerdict:
    """The gate's verdict from each run stage's verdicts by schedule, in stage order: the first
    failing stage and order decides; all passing accepts."""
    run = tuple(stage for stage, _ in stage_results)
    last = None
    for stage, by_schedule in stage_results:
        for schedule in schedules:
            verdict = by_schedule[schedule]
            last = verdict
            if not verdict.accepted:
                first = next((v for v in verdict.inputs if not v.passed), None)
                failing = None
                if first is not None:
                    _, generator, preset, _ = parse_input_id(first.input_id)
                    failing = {"generator": generator, "shape": preset, "outcome": first.outcome}
                return GateVerdict(verdict, stage, schedule, failing, checker_alone, run)
    return GateVerdict(last, None, None, None, checker_alone, run)


@functools.cache
def default_contract(problem: str) -> dict:
    """The contract of the gate every reward uses by default (the committed checker, the shipped
    pool): what `mutagym dataset` writes into the prompts."""
    from ..rewards.checker import default_checker
    return RewardGate(default_checker(), _default_pools(), None).contract(problem)


@functools.cache
def _default_pools() -> PoolRegistry:
    return PoolRegistry()
