"""Fresh seeds: a checker's suite redrawn for every evaluation, so a policy cannot memorise it.

Each input of the suite keeps its generator and shape preset and gets a seed derived from a secret
and a counter (sha256), so the draws are unpredictable without the secret and reproducible with it.
A drawn input is used only after the validity gate passed it for the checker's comparator (every
correct kernel of the problem passes it, in every one of `schedules`), so fresh seeds never turn
into false rejects; that gate also measures each draw's envelope (`take_envelope`). Inputs are
gated in batches and each is used once; the draws a whole trainer batch needs are gated together
(`redraw_many`: one run of each correct kernel per problem), which is what keeps gating cheap.

>>> from mutagym.rewards.checker import load_checker
>>> fresh = FreshSuites(secret=7)
>>> suite = fresh.draw(load_checker("kernelbench"), "relu")              # doctest: +SKIP
>>> [r.generator for r in suite] == ["uniform01"] * 5                    # doctest: +SKIP
True
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence

from ..rewards.checker import CheckerVersion, InputRef
from ..rewards.envelope import InputEnvelope
from ..rewards.input_cache import InputCache
from ..rewards.validity import check_validity
from ..substrates.catalog import load_problem

__all__ = ["FreshSuites", "FreshSeedError"]


class FreshSeedError(RuntimeError):
    """No valid fresh input could be drawn for a suite entry (every draw failed the gate)."""


class FreshSuites:
    """Draws fresh, gated suites; `batch` inputs are gated at once per suite entry."""

    def __init__(self, secret: int | str | bytes, *, backend: str = "cpu", cache: InputCache | None = None,
                 batch: int = 4, max_rounds: int = 4, schedules: Sequence[str] = ("ascending",)):
        self._secret = secret if isinstance(secret, bytes) else str(secret).encode()
        self.backend, self.batch, self.max_rounds = backend, batch, max_rounds
        self.schedules = tuple(schedules)
        self.cache = cache if cache is not None else InputCache()
        self._ready: dict[tuple, deque[InputRef]] = {}
        self._counter: dict[tuple, int] = {}
        self._envelopes: dict[tuple[str, str], InputEnvelope] = {}

    def take_envelope(self, problem: str, ref: InputRef) -> InputEnvelope | None:
        """The envelope a drawn input's validity gate measured (in `schedules`), handed over once
        (None after, or for an input this stream did not draw): a long run keeps no history."""
        return self._envelopes.pop((problem, ref.id_for(load_problem(problem))), None)

    def _seed(self, key: tuple, n: int) -> int:
        digest = hashlib.sha256(self._secret + repr((key, n)).encode()).digest()
        return int.from_bytes(digest[:7], "little")

    def seed_for(self, *key: str) -> int:
        """A seed of this stream for `key` (the same key, the same seed): unpredictable without
        the secret, reproducible with it."""
        return self._seed(("seed", *key), 0)

    def draw(self, checker: CheckerVersion, problem: str) -> list[InputRef]:
        """One fresh suite for `problem`: the checker's inputs with new, gated seeds."""
        return self.redraw(checker, problem, checker.inputs_for(problem))

    def redraw(self, checker: CheckerVersion, problem: str, refs: list[InputRef],
               batch: int | None = None) -> list[InputRef]:
        """Each of `refs` with a new seed (same generator and shape), gated valid for `checker`'s
        comparator of `problem`, *batch* draws at a time (default: the suites' `batch`)."""
        [drawn] = self.redraw_many([(checker, problem, refs, batch)])
        missing = next((ref for ref, d in zip(refs, drawn) if d is None), None)
        if missing is not None:
            raise FreshSeedError(f"problem {problem!r}: no fresh {missing.generator}/{missing.preset} input "
                                 f"passed the validity gate in {self.max_rounds} rounds of draws")
        return drawn

    def redraw_many(self, requests: Sequence[tuple[CheckerVersion, str, list[InputRef], int | None]]
                    ) -> list[list[InputRef | None]]:
        """`redraw` for each `(checker, problem, refs, batch)` request, with None for a ref no draw
        of which passed the gate in `max_rounds` rounds. Every draw that is needed is gated in one
        run of the correct kernels per problem and tolerance (a trainer's batch of kernels shares
        it), and every request gets draws of its own."""
        wanted = [(self._key(checker, problem, ref), checker, problem, ref, batch or self.batch)
                  for checker, problem, refs, batch in requests for ref in refs]
        need: dict[tuple, int] = {}
        for key, *_ in wanted:
            need[key] = need.get(key, 0) + 1
        how = {key: (checker, problem, ref, batch) for key, checker, problem, ref, batch in wanted}
        for key in need:
            self._ready.setdefault(key, deque())
        for _ in range(self.max_rounds):
            short = {key: n - len(self._ready[key]) for key, n in need.items() if len(self._ready[key]) < n}
            if not short:
                break
            self._gate({key: (checker, problem, ref, max(batch, n))
                        for key, n in short.items() for checker, problem, ref, batch in [how[key]]})
        out, k = [], 0
        for _, _, refs, _ in requests:
            out.append([])
            for _ in refs:
                ready = self._ready[wanted[k][0]]
                out[-1].append(ready.popleft() if ready else None)
                k += 1
        return out

    def _key(self, checker: CheckerVersion, problem: str, ref: InputRef) -> tuple:
        c = checker.comparator_for(problem)
        return (problem, ref.generator, ref.preset, c.atol, c.rtol, c.matched_ratio)

    def _gate(self, draws: dict[tuple, tuple[CheckerVersion, str, InputRef, int]]) -> None:
        """Draw `count` new seeds of each key's pattern and add the valid ones to its ready queue:
        one `check_validity` per problem and comparator over every draw."""
        groups: dict[tuple, list] = {}
        for key, (checker, problem, ref, count) in draws.items():
            start = self._counter.get(key, 0)
            self._counter[key] = start + count
            p = load_problem(problem)
            for n in range(start, start + count):
                r = InputRef(generator=ref.generator, preset=ref.preset, seed=self._seed(key, n))
                try:
                    g, refs = self.cache.get(p, r)
                except ValueError:   # a shape-class seed whose draw misses its class: not a candidate
                    continue
                groups.setdefault((problem, key[3:]), (checker, []))[1].append((key, r, g, refs))
        for (problem, _), (checker, made) in groups.items():
            comparator = checker.comparator_for(problem)
            verdicts = check_validity(load_problem(problem), [g for _, _, g, _ in made], comparator,
                                      backend=self.backend, schedules=self.schedules,
                                      references=[refs for *_, refs in made])
            for (key, r, g, refs), v in zip(made, verdicts):
                if v.valid:
                    self._ready[key].append(r)
                    self._envelopes[(problem, g.id)] = v.envelope(load_problem(problem), comparator, refs)

    def pick(self, problem: str, choices: list, k: int) -> list:
        """`k` of `choices` (without repeats), chosen anew by the secret stream at every call."""
        key = ("pick", problem)
        n = self._counter.get(key, 0)
        self._counter[key] = n + 1
        order = sorted(range(len(choices)), key=lambda i: self._seed(key, (n, i)))
        return [choices[i] for i in order[:k]]
