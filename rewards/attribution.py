"""Attribution: how much of checker B's detection gain over checker A comes from its inputs and
how much from its tolerance.

A checker is an input suite and a comparator, so B's gain over A has two causes. Crossing them
gives four detection rates on the same witnessed pool (`det(inputs of X, comparator of Y)`):

| | A's tolerance | B's tolerance |
| --- | --- | --- |
| A's inputs | det(A, A) | det(A, B) |
| B's inputs | det(B, A) | det(B, B) |

and the gain `det(B, B) - det(A, A)` splits in two orders:

- inputs first: inputs = det(B, A) - det(A, A), tolerance = det(B, B) - det(B, A);
- tolerance first: tolerance = det(A, B) - det(A, A), inputs = det(B, B) - det(A, B).

The two orders differ by the interaction `det(B,B) - det(B,A) - det(A,B) + det(A,A)` (mutants
that only the new inputs *and* the new tolerance together catch). The reported split is the
Shapley value of the two-player game: the average of the two orders, so each factor gets half the
interaction and the parts always sum to the gain. The paper splits KernelBench-Verified's +8.5
points over KernelBench into +4.0 (inputs) and +4.5 (tolerance).

Rates are fractions of the witnessed pool; `points` multiplies by 100.

>>> sets = {("A", "A"): {1, 2}, ("B", "A"): {1, 2, 3}, ("A", "B"): {1, 2, 4}, ("B", "B"): {1, 2, 3, 4}}
>>> r = attribute(lambda i, c: sets[i, c], "A", "B", witnessed=range(1, 9))
>>> r.points()
{'gain': 25.0, 'inputs': 12.5, 'tolerance': 12.5, 'interaction': 0.0}
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Attribution", "attribute"]

C = TypeVar("C")


@dataclass(frozen=True)
class Attribution:
    """The four crossed detection rates and the split of `gain = det_bb - det_aa`.

    `inputs` / `tolerance` are the Shapley split (average of the two orders); `inputs_first`
    and `tolerance_first` are the one-sided orders as `(inputs part, tolerance part)`.
    """

    det_aa: float
    det_ba: float
    det_ab: float
    det_bb: float
    total: int

    @property
    def gain(self) -> float:
        return self.det_bb - self.det_aa

    @property
    def inputs_first(self) -> tuple[float, float]:
        """B's inputs added first, then B's tolerance: (inputs part, tolerance part)."""
        return self.det_ba - self.det_aa, self.det_bb - self.det_ba

    @property
    def tolerance_first(self) -> tuple[float, float]:
        """B's tolerance added first, then B's inputs: (inputs part, tolerance part)."""
        return self.det_bb - self.det_ab, self.det_ab - self.det_aa

    @property
    def inputs(self) -> float:
        """Shapley share of the gain due to the inputs."""
        return (self.inputs_first[0] + self.tolerance_first[0]) / 2

    @property
    def tolerance(self) -> float:
        """Shapley share of the gain due to the tolerance."""
        return (self.inputs_first[1] + self.tolerance_first[1]) / 2

    @property
    def interaction(self) -> float:
        """det(B,B) - det(B,A) - det(A,B) + det(A,A): the gain only both changes together give."""
        return self.det_bb - self.det_ba - self.det_ab + self.det_aa

    def points(self) -> dict[str, float]:
        """gain, inputs, tolerance and interaction in percentage points (rounded to 1e-9)."""
        return {k: round(100 * v, 9) for k, v in (("gain", self.gain), ("inputs", self.inputs),
                                                  ("tolerance", self.tolerance),
                                                  ("interaction", self.interaction))}


def attribute(detected: Callable[[C, C], Collection[Any]], a: C, b: C, *,
              witnessed: Iterable[Any]) -> Attribution:
    """Split checker `b`'s detection gain over `a` into inputs and tolerance.

    `detected(inputs_of, comparator_of)` returns the mutant ids a checker built from
    `inputs_of`'s inputs and `comparator_of`'s comparator kills (for checker versions,
    `rewards.checker.crossed(inputs_of, comparator_of)` builds that checker). It is called for
    (a, a), (b, a), (a, b) and (b, b); only `witnessed` mutants count.
    """
    pool = set(witnessed)
    if not pool:
        raise ValueError("attribution needs a non-empty witnessed pool")

    def rate(i: C, c: C) -> float:
        return len(pool & set(detected(i, c))) / len(pool)

    return Attribution(rate(a, a), rate(b, a), rate(a, b), rate(b, b), len(pool))
