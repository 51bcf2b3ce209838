"""Generated inputs and their fp64 references, kept between evaluations of one process.

A long-lived judge (the environment, a prescreen actor, a trainer's reward function) judges many
kernels on the same few inputs. Generating a large-reduction input and computing its float64
reference costs more than running most kernels on it, so both are kept here, keyed by input id,
and evicted least-recently-used beyond a byte budget. It is mutagym's one reference cache: the
judging core (`judging.py`) takes a caller's long-lived one, else the process's `shared_cache()`.

>>> from mutagym.substrates.catalog import load_problem
>>> from mutagym.rewards.checker import InputRef
>>> cache = InputCache()
>>> g, ref = cache.get(load_problem("relu"), InputRef(generator="normal", preset="tiny"))
>>> g.id, sorted(ref), cache.get(load_problem("relu"), InputRef(generator="normal", preset="tiny"))[0] is g
('relu:normal:tiny:0', ['out'], True)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only (checker imports this module)
    from ..substrates.catalog import Problem
    from .checker import InputRef
    from .generators import GeneratedInput

__all__ = ["InputCache"]

#: Default budget: a few problems' whole pools of record (a large-reduction input is ~10 MB).
DEFAULT_BUDGET_BYTES = 1 << 30


class InputCache:
    """LRU of `(GeneratedInput, reference outputs)` by input id, bounded by `budget_bytes`."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        if budget_bytes < 0:
            raise ValueError(f"InputCache(budget_bytes={budget_bytes!r}): must be >= 0")
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()    # a scorer's background thread shares the process's cache
        self._entries: OrderedDict[str, tuple[GeneratedInput, dict, int]] = OrderedDict()
        self._bytes = 0

    def get(self, problem: Problem, ref: InputRef) -> tuple[GeneratedInput, dict[str, np.ndarray]]:
        """The input `ref` of `problem` and its fp64 reference outputs (made once, then kept)."""
        hit = self._hit(ref.id_for(problem))
        return hit if hit is not None else self._put(problem, ref.generate(problem))

    def reference(self, problem: Problem, g: GeneratedInput) -> dict[str, np.ndarray]:
        """The fp64 reference outputs of the generated input `g`, kept by its id (arrays that are not
        those the id was first seen with get their own reference, which replaces the kept one)."""
        hit = self._hit(g.id)
        if hit is not None and (hit[0] is g or _same_arrays(hit[0], g)):
            return hit[1]
        return self._put(problem, g)[1]

    def _hit(self, key: str) -> tuple[GeneratedInput, dict] | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0], hit[1]

    def _put(self, problem: Problem, g: GeneratedInput) -> tuple[GeneratedInput, dict[str, np.ndarray]]:
        reference = problem.reference_outputs(g.inputs, problem.scalar_values(), dims=g.dims)
        size = sum(np.asarray(a).nbytes for a in (*g.inputs.values(), *reference.values()))
        with self._lock:
            if g.id in self._entries:
                self._bytes -= self._entries.pop(g.id)[2]
            self._entries[g.id] = (g, reference, size)
            self._bytes += size
            while self._bytes > self.budget_bytes and len(self._entries) > 1:
                _, (_, _, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted
        return g, reference

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes held (inputs and references)."""
        return self._bytes


def _same_arrays(a: GeneratedInput, b: GeneratedInput) -> bool:
    return (a.dims == b.dims and a.inputs.keys() == b.inputs.keys()
            and all(np.array_equal(a.inputs[k], b.inputs[k]) for k in a.inputs))
