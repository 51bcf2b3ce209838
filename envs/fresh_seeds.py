"""Fresh seeds: a checker's suite redrawn for every evaluation, so a policy cannot memorise it.

Each input of the suite keeps its generator and shape preset and gets a seed derived from a secret
and a counter (sha256), so the draws are unpredictable without the secret and reproducible with it.
A drawn input is used only after the validity gate passed it for the checker's comparator (every
correct kernel of the problem passes it), so fresh seeds never turn into false rejects. Inputs are
gated in batches and each is used once.

>>> from mutagym.rewards.checker import load_checker
>>> fresh = FreshSuites(secret=7)
>>> suite = fresh.draw(load_checker("kernelbench"), "relu")              # doctest: +SKIP
>>> [r.generator for r in suite] == ["uniform01"] * 5                    # doctest: +SKIP
True
"""

from __future__ import annotations

import hashlib
from collections import deque

from ..rewards.checker import CheckerVersion, InputRef
from ..rewards.input_cache import InputCache
from ..rewards.validity import check_validity
from ..substrates.catalog import load_problem

__all__ = ["FreshSuites", "FreshSeedError"]


class FreshSeedError(RuntimeError):
    """No valid fresh input could be drawn for a suite entry (every draw failed the gate)."""


class FreshSuites:
    """Draws fresh, gated suites; `batch` inputs are gated at once per suite entry."""

    def __init__(self, secret: int | str | bytes, *, backend: str = "cpu", cache: InputCache | None = None,
                 batch: int = 4, max_rounds: int = 4):
        self._secret = secret if isinstance(secret, bytes) else str(secret).encode()
        self.backend, self.batch, self.max_rounds = backend, batch, max_rounds
        self.cache = cache if cache is not None else InputCache()
        self._ready: dict[tuple, deque[InputRef]] = {}
        self._counter: dict[tuple, int] = {}

    def _seed(self, key: tuple, n: int) -> int:
        digest = hashlib.sha256(self._secret + repr((key, n)).encode()).digest()
        return int.from_bytes(digest[:7], "little")

    def draw(self, checker: CheckerVersion, problem: str) -> list[InputRef]:
        """One fresh suite for `problem`: the checker's inputs with new, gated seeds."""
        return self.redraw(checker, problem, checker.inputs_for(problem))

    def redraw(self, checker: CheckerVersion, problem: str, refs: list[InputRef],
               batch: int | None = None) -> list[InputRef]:
        """Each of `refs` with a new seed (same generator and shape), gated valid for `checker`'s
        comparator of `problem`, *batch* draws at a time (default: the suites' `batch`)."""
        return [self._next(checker, problem, ref, batch or self.batch) for ref in refs]

    def pick(self, problem: str, choices: list, k: int) -> list:
        """`k` of `choices` (without repeats), chosen anew by the secret stream at every call."""
        key = ("pick", problem)
        n = self._counter.get(key, 0)
        self._counter[key] = n + 1
        order = sorted(range(len(choices)), key=lambda i: self._seed(key, (n, i)))
        return [choices[i] for i in order[:k]]

    def _next(self, checker: CheckerVersion, problem: str, ref: InputRef, batch: int) -> InputRef:
        c = checker.comparator_for(problem)
        key = (problem, ref.generator, ref.preset, c.atol, c.rtol, c.matched_ratio)
        ready = self._ready.setdefault(key, deque())
        rounds = 0
        while not ready:
            if rounds == self.max_rounds:
                raise FreshSeedError(f"problem {problem!r}: no fresh {ref.generator}/{ref.preset} input "
                                     f"passed the validity gate in {rounds * batch} draws")
            rounds += 1
            start = self._counter.get(key, 0)
            self._counter[key] = start + batch
            drawn = [InputRef(generator=ref.generator, preset=ref.preset, seed=self._seed(key, n))
                     for n in range(start, start + batch)]
            p = load_problem(problem)
            made = []
            for r in drawn:
                try:
                    made.append((r, *self.cache.get(p, r)))
                except ValueError:   # a shape-class seed whose draw misses its class: not a candidate
                    continue
            verdicts = check_validity(p, [g for _, g, _ in made], c, backend=self.backend,
                                      references=[refs for _, _, refs in made]) if made else []
            ready.extend(r for (r, _, _), v in zip(made, verdicts) if v.valid)
        return ready.popleft()
