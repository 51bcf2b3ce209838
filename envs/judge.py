"""The judging service behind the environment and the trainer reward functions.

`Judge.judge(source, problem)` is the whole reward path (docs/reward.md): parse and statically
check the text, compile it with NVRTC (the compile gate: what a GPU would accept) and for the
backend, run the checker (by default the committed hardened one) and turn its verdict into a
reward; in parallel, Ray workers run the same kernel against the problem's pool of record, and the
two are joined into `false_accept` / `false_reject`. `judge_many` sends checker runs to the
workers too, so a trainer's batch is judged in parallel.

Categories and the reward each earns (`RewardShaping`): `source_error` (the text is not a valid
submission), `compile_error`, `runtime_fault` (memory fault, sync error, timeout, crash, forbidden
system call, refused launch), `wrong`, `correct`; and `infra_error` when mutagym itself failed, in
which case the reward says nothing about the kernel (trainers get `None`).

The `LeakageLedger` keeps running totals per checker version: reward given to kernels the pool of
record rejects (leaked) and reward withheld from kernels it accepts. With a `field_dir`, every kernel
the gate rejects on an input is also kept there with that input's id (`field_ledger.FieldLedger`),
so that a later `mutagym harden --field` covers what policies actually wrote.
"""

from __future__ import annotations

import copy
import hashlib
import math
import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ..rewards.checker import (CheckerVersion, InputVerdict, Verdict, default_checker, evaluate_source_schedules,
                               load_checker)
from ..rewards.falsify import search_source
from ..rewards.input_cache import InputCache
from ..rewards.judging import BUILD_FAULTS, RUN_FAULTS
from ..runtime.errors import CompileError, InfrastructureError, SubmissionError
from .field_ledger import FieldLedger
from .fresh_seeds import FreshSeedError, FreshSuites
from .gate import FRESH_BATCH, GateFailure, GateVerdict, RewardGate, Stage
from .pool import PoolRegistry
from .prescreen import JudgePool, WorkFailed, WorkTimeout

__all__ = ["CATEGORIES", "Judge", "Judgement", "LeakageLedger", "MAX_SOURCE_CHARS", "RewardShaping"]

CATEGORIES = ("source_error", "compile_error", "runtime_fault", "wrong", "correct", "infra_error")
#: The longest submission judged; longer texts are a source error (a kernel fits in far less).
MAX_SOURCE_CHARS = 65536


@dataclass(frozen=True)
class RewardShaping:
    """The reward of each category. The default is binary: 1 for correct, 0 otherwise.

    >>> RewardShaping(source_error=-1.0, compile_error=-0.5).reward("compile_error")
    -0.5
    """

    source_error: float = 0.0
    compile_error: float = 0.0
    runtime_fault: float = 0.0
    wrong: float = 0.0
    correct: float = 1.0

    def __post_init__(self) -> None:
        for f in fields(self):
            if not math.isfinite(getattr(self, f.name)):
                raise ValueError(f"RewardShaping.{f.name} must be a finite number, got {getattr(self, f.name)!r}")

    def reward(self, category: str) -> float:
        """The reward of `category` (an infrastructure error earns the wrong-answer value)."""
        return getattr(self, "wrong" if category == "infra_error" else category)


@dataclass(frozen=True)
class Judgement:
    """One kernel judged: reward, verdict and the prescreen's view. `info()` is its JSON form."""

    reward: float
    accepted: bool
    outcome: str
    category: str
    checker: str
    problem: str
    message: str = ""
    infra_error: bool = False
    inputs: tuple[dict, ...] = ()
    prescreen: dict | None = None
    gate: dict | None = None

    def info(self) -> dict[str, Any]:
        """The deterministic, JSON-able record an episode's `info` carries (no timings)."""
        return {"verdict": "accept" if self.accepted else "reject", "accepted": self.accepted,
                "outcome": self.outcome, "category": self.category, "reward": self.reward,
                "checker": self.checker, "problem": self.problem, "message": self.message,
                "infra_error": self.infra_error, "inputs": [dict(i) for i in self.inputs],
                "prescreen": dict(self.prescreen) if self.prescreen is not None else None,
                "gate": copy.deepcopy(self.gate)}

    def checker_alone(self) -> tuple[bool, bool] | None:
        """(false accept, false reject) of the plain checker against the strongest check that ran
        (the gate, or the prescreen's pool of record); None when neither gave a verdict."""
        if self.gate is not None and not self.infra_error:
            alone = self.gate["checker_alone"]
            return alone["false_accept"], False
        pre = self.prescreen or {}
        if pre.get("false_accept") is None:
            return None
        return pre["false_accept"], pre["false_reject"]


@dataclass
class LeakageLedger:
    """Running totals per checker version: judged kernels, false accepts and rejects, reward
    leaked to kernels the pool of record rejects and withheld from kernels it accepts."""

    totals: dict[str, dict[str, float]] = field(default_factory=dict)

    def record(self, judgement: Judgement, full_reward: float) -> None:
        if judgement.infra_error:
            return
        t = self.totals.setdefault(judgement.checker, {"judged": 0, "prescreened": 0, "false_accepts": 0,
                                                       "false_rejects": 0, "leaked_reward": 0.0,
                                                       "withheld_reward": 0.0})
        t["judged"] += 1
        if judgement.gate is not None:   # the gate is the strongest check: it leaks nothing we can see
            alone = judgement.gate["checker_alone"]
            t.setdefault("checker_alone_false_accepts", 0)
            t.setdefault("checker_alone_leaked_reward", 0.0)
            t["checker_alone_false_accepts"] += int(alone["false_accept"])
            t["checker_alone_leaked_reward"] += full_reward if alone["false_accept"] else 0.0
            return
        pre = judgement.prescreen or {}
        if pre.get("pool_accepted") is None:
            return
        t["prescreened"] += 1
        if pre["pool_accepted"] is False:
            t["leaked_reward"] += judgement.reward if judgement.accepted else 0.0
            t["false_accepts"] += int(judgement.accepted)
        else:
            t["withheld_reward"] += full_reward - judgement.reward
            t["false_rejects"] += int(not judgement.accepted)

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {k: dict(v) for k, v in sorted(self.totals.items())}


class _Memo:
    """A small LRU map: judgements are deterministic functions of (text, problem, checker, pool),
    so a text judged before is answered from here (RL policies resubmit identical texts often)."""

    def __init__(self, size: int = 4096):
        self.size, self._items = size, OrderedDict()

    def get(self, key):
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        return None

    def put(self, key, value) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


def _category(verdict: Verdict) -> str:
    """The reward category of a verdict's outcome (`rewards.judging.OUTCOMES`)."""
    if verdict.accepted:
        return "correct"
    if verdict.outcome in BUILD_FAULTS:
        return verdict.outcome
    return "runtime_fault" if verdict.outcome in RUN_FAULTS else "wrong"


def _witness(failed: Verdict, judged: Sequence[Verdict]) -> InputVerdict | None:
    """The input of `failed` that witnesses its fault, None when no input does.

    A witness is an input whose failure depends on it. A kernel that never ran (the CPU build
    refused what NVRTC accepted) fails every input alike, and so does a launch plan refused on
    every input the evaluation tried (`judged`: all its verdicts): no input witnesses those."""
    if not failed.built:
        return None
    first = next((v for v in failed.inputs if not v.passed), None)
    if first is not None and first.outcome == "launch_error":
        launched = any(v.outcome != "launch_error" for verdict in judged for v in verdict.inputs)
        return first if launched else None
    return first


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _input_summary(verdict: Verdict) -> tuple[dict, ...]:
    """Per input: generator, shape preset, outcome and errors, never the seed or the arrays."""
    from ..rewards.generators import parse_input_id
    summary = []
    for k, v in enumerate(verdict.inputs):
        _, generator, preset, _ = parse_input_id(v.input_id)
        summary.append({"index": k, "generator": generator, "preset": preset, "passed": v.passed,
                        "outcome": v.outcome, "max_abs": _finite(v.max_abs), "max_rel": _finite(v.max_rel),
                        "mismatch_ratio": _finite(v.mismatch_ratio)})
    return tuple(summary)


class Judge:
    """Judges submissions for problems with one checker version, optionally prescreened.

    By default every reward is decided by the reward gate (`gate.py`): the committed hardened
    suite, then the pool of record, then fresh cases drawn at every evaluation, each in three
    thread orders, stopping at the first failure. Naming a `checker` judges with that checker
    alone (audits and measurements), as does `gate=False`.

    Arguments:
        checker: a `CheckerVersion`, a preset name or a checker file; default: the committed one
            (as the gate's first stage).
        gate: judge with the reward gate (default: when no checker is named).
        prescreen: use Ray workers: with the gate, for its pool and fresh stages (else they run
            here); with a plain checker, run every kernel against the pool of record for `info`.
        backend: runtime backend of the checker runs in this process (`auto`: GPU if present).
        shaping: reward per category.
        fresh_seeds: with a plain checker, redraw its suite at every evaluation besides the fixed
            inputs, which stay (gated; see `fresh_seeds.py`). `secret` seeds these draws and the
            gate's fresh stage (default: random, so unpredictable and not reproducible).
        workers, address, num_cpus: the Ray pool (see `prescreen.JudgePool`).
        pool_file: pool of record file or kill-matrix folder (default: the one shipped with mutagym).
        field_dir: a field ledger folder: each kernel the gate rejects on an input is kept there
            (`field_ledger.py`; default: none).
    """

    def __init__(self, checker: CheckerVersion | str | None = None, *, prescreen: bool = True,
                 backend: str = "auto", shaping: RewardShaping | None = None, fresh_seeds: bool = False,
                 secret: int | str | bytes | None = None, workers: int | None = None,
                 address: str | None = None, num_cpus: int | None = None, timeout_s: float = 300.0,
                 pool_file: str | None = None, gate: bool | None = None, field_dir: str | None = None):
        from ..runtime.cuda_backend import cuda_available
        self.checker = checker if isinstance(checker, CheckerVersion) else (
            load_checker(checker) if checker else default_checker())
        self.backend = ("cuda" if cuda_available() else "cpu") if backend == "auto" else backend
        self.shaping = shaping or RewardShaping()
        self.prescreen = prescreen
        self.cache = InputCache()
        secret = secrets.randbits(64) if secret is None else secret
        self.fresh = FreshSuites(secret, backend=self.backend, cache=self.cache) if fresh_seeds else None
        self.pools = PoolRegistry(pool_file, backend=self.backend)
        self.gate = (RewardGate(self.checker, self.pools,
                                FreshSuites(secret, backend=self.backend, cache=self.cache, batch=FRESH_BATCH))
                     if (checker is None if gate is None else gate) else None)
        self.workers = JudgePool(workers=workers, address=address, num_cpus=num_cpus, timeout_s=timeout_s)
        self.leakage = LeakageLedger()
        self.field = FieldLedger(field_dir) if field_dir is not None else None
        self._judged = _Memo()        # (text sha, problem) -> Judgement; not with fresh seeds
        self._prescreened = _Memo()   # (text sha, problem) -> prescreen report
        self._lock = threading.RLock()  # callers' threads (verl's reward workers) take turns

    @property
    def checker_id(self) -> str:
        """The version judgements name: the gate's when it judges, else the checker's."""
        return self.gate.version_id if self.gate is not None else self.checker.version_id

    def contract(self, problem: str) -> dict | None:
        """What the gate judges for `problem` (tolerances, shapes, values, orders); None without one."""
        return self.gate.contract(problem) if self.gate is not None else None

    def close(self) -> None:
        self.workers.close()

    # ------------------------------------------------------------------ one kernel
    def judge(self, source: str, problem: str) -> Judgement:
        """Judge one submission for `problem` (checker here, prescreen on the workers)."""
        with self._lock:
            return self._judge_all([(source, problem)], checker_on_workers=False)[0]

    def judge_many(self, items: Sequence[tuple[str, str]]) -> list[Judgement]:
        """Judge `(source, problem)` pairs, checker runs and prescreens all on the workers."""
        with self._lock:
            return self._judge_all(list(items), checker_on_workers=True)

    def _judge_all(self, items: list[tuple[str, str]], checker_on_workers: bool) -> list[Judgement]:
        from ..substrates.catalog import load_problem
        for _, problem in items:
            load_problem(problem)       # an unknown id is the caller's error, named before any work
        keys = [(hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest() if isinstance(s, str) else None, p)
                for s, p in items]
        if self.gate is not None:
            return self._judge_gated(items, keys, batch=checker_on_workers)
        out: list[Judgement | None] = [None] * len(items)
        pending = {}
        for k, ((source, problem), key) in enumerate(zip(items, keys)):
            known = self._judged.get(key) if self.fresh is None else None
            if known is not None:
                out[k] = known
                continue
            early = self._screen_source(source, problem)
            suite = self._suite(problem) if early is None else None
            if early is not None or isinstance(suite, Judgement):
                out[k] = early or suite
                continue
            pending[k] = (suite, self._submit(source, problem, key, suite, checker_on_workers))
        for k, (suite, handles) in pending.items():
            source, problem = items[k]
            out[k] = self._finish(source, problem, keys[k], suite, handles)
        for j, key in zip(out, keys):
            if self.fresh is None and not j.infra_error and (j.prescreen is None or j.prescreen["status"] == "ok"):
                self._judged.put(key, j)
            self.leakage.record(j, self.shaping.correct)
        return out

    # ------------------------------------------------------------------ the gate
    def _judge_gated(self, items, keys, batch: bool) -> list[Judgement]:
        """Texts screened here; the gate walks the rest through its stages (`RewardGate.judge`):
        a *batch*'s suite on the workers, the later stages there when `prescreen` allows."""
        out: list[Judgement | None] = [self._judged.get(key) for key in keys]
        for k, (source, problem) in enumerate(items):
            out[k] = out[k] or self._screen_source(source, problem)
        pending = [k for k, j in enumerate(out) if j is None]
        runner = _StageRuns(self.workers, self.gate.schedules, self.backend, self.cache,
                            suite_on_workers=batch, later_on_workers=self.prescreen)
        for k, gated in zip(pending, self.gate.judge([items[k] for k in pending], runner)):
            source, problem = items[k]
            out[k] = (self._fail("infra_error", problem, gated.message) if isinstance(gated, GateFailure)
                      else self._gate_judgement(problem, gated, source))
        for j, key in zip(out, keys):
            if not j.infra_error:
                self._judged.put(key, j)
            self.leakage.record(j, self.shaping.correct)
        return out

    def _gate_judgement(self, problem: str, gated: GateVerdict, source: str) -> Judgement:
        verdict = gated.verdict
        witness = _witness(verdict, [v for _, by_schedule in gated.results for v in by_schedule.values()])
        if self.field is not None and witness is not None:
            info = gated.info(self.checker_id)
            self.field.record(source, problem, gate=self.checker_id, checker=self.gate.checker.version_id,
                              stage=gated.stage, schedule=gated.schedule, outcome=witness.outcome,
                              witness=witness.input_id,
                              checker_alone_false_accept=info["checker_alone"]["false_accept"])
        category = _category(verdict)
        message = verdict.message
        for index, v in enumerate(verdict.inputs):   # input ids name seeds: tell the position only
            message = message.replace(v.input_id, f"#{index} of the {gated.stage} stage")
        summary = () if verdict.accepted else tuple({"stage": gated.stage, **row} for row in _input_summary(verdict))
        return Judgement(reward=self.shaping.reward(category), accepted=verdict.accepted, outcome=verdict.outcome,
                         category=category, checker=self.checker_id, problem=problem, message=message,
                         inputs=summary, gate=gated.info(self.checker_id))

    def _fail(self, category: str, problem: str, message: str, outcome: str | None = None) -> Judgement:
        return Judgement(reward=self.shaping.reward(category), accepted=False, outcome=outcome or category,
                         category=category, checker=self.checker_id, problem=problem, message=message,
                         infra_error=category == "infra_error")

    def _screen_source(self, source: Any, problem: str) -> Judgement | None:
        """Parse, check and NVRTC-compile; a Judgement when the text goes no further."""
        from ..runtime.nvrtc_gate import nvrtc_gate
        if not isinstance(source, str):
            return self._fail("source_error", problem, f"a submission is a text, got {type(source).__name__}")
        if len(source) > MAX_SOURCE_CHARS:
            return self._fail("source_error", problem, f"the submission has {len(source)} characters; "
                              f"at most {MAX_SOURCE_CHARS} are judged")
        try:
            nvrtc_gate(source)
        except CompileError as err:
            return self._fail("compile_error", problem, f"NVRTC: {err}")
        except SubmissionError as err:
            return self._fail("source_error", problem, str(err))
        except InfrastructureError as err:
            return self._fail("infra_error", problem, f"compile gate unavailable: {err}")
        return None

    def _suite(self, problem: str):
        if self.fresh is None:
            return list(self.checker.inputs_for(problem))
        try:   # the fixed inputs stay: a redraw alone can lose the value pattern that witnessed a fault
            return list(self.checker.inputs_for(problem)) + self.fresh.draw(self.checker, problem)
        except (FreshSeedError, InfrastructureError) as err:
            return self._fail("infra_error", problem, f"fresh seeds: {err}")

    def _submit(self, source: str, problem: str, key, suite, checker_on_workers: bool) -> dict:
        handles: dict[str, Any] = {}
        known = self._prescreened.get(key) if self.prescreen else None
        if known is not None:
            handles["prescreen_known"] = copy.deepcopy(known)
        elif self.prescreen:
            try:
                pool = self.pools.get(problem)
                handles["pool"] = pool
                handles["prescreen"] = [self.workers.submit(pool.checker(), problem, source, schedule=s)
                                        for s in pool.schedules]
            except Exception as err:  # noqa: BLE001 - a cluster that cannot start is reported, not raised
                handles["prescreen_error"] = f"{type(err).__name__}: {err}"
        if checker_on_workers:
            try:
                handles["checker"] = self.workers.submit(self.checker, problem, source, suite=suite)
            except Exception as err:  # noqa: BLE001
                handles["checker_error"] = f"{type(err).__name__}: {err}"
        return handles

    def _finish(self, source: str, problem: str, key, suite, handles: dict) -> Judgement:
        from ..rewards.checker import evaluate_source
        if "checker_error" in handles:
            verdict: Any = WorkFailed(handles["checker_error"])
        elif "checker" in handles:
            verdict = self.workers.gather([handles["checker"]])[0]
        else:
            try:
                verdict = evaluate_source(self.checker, problem, source, backend=self.backend, suite=suite,
                                          cache=self.cache)
            except Exception as err:  # noqa: BLE001 - mutagym failed (toolchain, a reference): not the kernel
                verdict = WorkFailed(f"{type(err).__name__}: {err}")
        prescreen = handles.get("prescreen_known") or self._prescreen(handles)
        if prescreen is not None and prescreen["status"] == "ok" and "prescreen_known" not in handles:
            self._prescreened.put(key, copy.deepcopy(prescreen))
        if not isinstance(verdict, Verdict):
            why = (f"the checker run took over {verdict.seconds:g} s" if isinstance(verdict, WorkTimeout)
                   else verdict.message)
            return Judgement(reward=self.shaping.reward("infra_error"), accepted=False, outcome="infra_error",
                             category="infra_error", checker=self.checker_id, problem=problem, message=why,
                             infra_error=True, prescreen=prescreen)
        category = _category(verdict)
        if prescreen is not None and prescreen.get("pool_accepted") is not None:
            prescreen["false_accept"] = verdict.accepted and not prescreen["pool_accepted"]
            prescreen["false_reject"] = (not verdict.accepted) and prescreen["pool_accepted"]
        return Judgement(reward=self.shaping.reward(category), accepted=verdict.accepted, outcome=verdict.outcome,
                         category=category, checker=self.checker_id, problem=problem,
                         message=_scrub(verdict.message, suite, problem), inputs=_input_summary(verdict),
                         prescreen=prescreen)

    def _prescreen(self, handles: dict) -> dict | None:
        """The prescreen's report: pool size, failures, the nearest mutant; `status` says whether
        it ran (`ok`), timed out or failed; false accept/reject are filled in by `_finish`."""
        if not self.prescreen:
            return None
        report: dict[str, Any] = {"status": "ok", "pool_size": 0, "pool_failures": 0, "pool_accepted": None,
                                  "false_accept": None, "false_reject": None, "nearest_mutant": None,
                                  "message": ""}
        if "prescreen_error" in handles:
            report.update(status="failed", message=handles["prescreen_error"])
            return report
        pool = handles["pool"]
        report["pool_size"] = len(pool.input_ids)
        results = self.workers.gather(handles["prescreen"])
        trouble = [r for r in results if not isinstance(r, Verdict)]
        if trouble:
            first = trouble[0]
            report.update(status="timeout" if isinstance(first, WorkTimeout) else "failed",
                          message=(f"over {first.seconds:g} s" if isinstance(first, WorkTimeout)
                                   else first.message))
            return report
        failing = sorted({v.input_id for r in results for v in r.inputs if not v.passed})
        report.update(pool_failures=len(failing), pool_accepted=all(r.accepted for r in results),
                      nearest_mutant=pool.nearest_mutant(failing))
        return report


@dataclass(frozen=True)
class _Sent:
    """A stage's calls in flight on the workers."""

    calls: list


class _StageRuns:
    """The gate's `StageRunner`: the suite stage runs on the Ray workers when *suite_on_workers*
    (a batch), the later stages when *later_on_workers*, else in this process; a worker's timeout
    or failure, or mutagym's own failure here, is a `GateFailure`."""

    def __init__(self, workers: JudgePool, schedules: tuple[str, ...], backend: str, cache: InputCache, *,
                 suite_on_workers: bool, later_on_workers: bool):
        self.workers, self.schedules, self.backend, self.cache = workers, schedules, backend, cache
        self.suite_on_workers, self.later_on_workers = suite_on_workers, later_on_workers

    def start(self, stage: Stage, problem: str, source: str, *, split: bool):
        orders = stage.orders or self.schedules
        if self.suite_on_workers if stage.name == "suite" else self.later_on_workers:
            try:
                calls = [(s,) for s in orders] if split and stage.search is None else [orders]
                return _Sent([self.workers.submit(stage.checker, problem, source, schedule=c, suite=stage.refs,
                                                  envelopes=stage.envelopes, search=stage.search) for c in calls])
            except Exception as err:  # noqa: BLE001 - a cluster that cannot start is mutagym's failure
                return GateFailure(f"{type(err).__name__}: {err}")
        try:
            if stage.search is not None:
                return search_source(stage.checker, problem, source, stage.refs, stage.search,
                                     schedules=orders, rule=stage.envelopes.rule, backend=self.backend,
                                     cache=self.cache)
            return evaluate_source_schedules(stage.checker, problem, source, orders, backend=self.backend,
                                             suite=stage.refs, cache=self.cache, envelopes=stage.envelopes)
        except Exception as err:  # noqa: BLE001 - mutagym failed (toolchain, a reference): not the kernel
            return GateFailure(f"{type(err).__name__}: {err}")

    def result(self, handle):
        if not isinstance(handle, _Sent):
            return handle
        merged: dict = {}
        for result in self.workers.gather(handle.calls):
            if isinstance(result, WorkTimeout):
                return GateFailure(f"a gate stage took over {result.seconds:g} s")
            if isinstance(result, WorkFailed):
                return GateFailure(result.message)
            merged.update(result)
        return merged


def _scrub(message: str, suite, problem: str) -> str:
    """The verdict's message with each input id replaced by its position (seeds stay hidden)."""
    for k, ref in enumerate(suite):
        message = message.replace(ref.id_for(problem), f"#{k} ({ref.preset} shape)")
    return message
