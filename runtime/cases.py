"""One kernel run's inputs, shared by the CPU emulator and the `cuda` backend."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["RunCase", "SCHEDULES", "parse_schedule"]

#: Thread orders a backend accepts: `shuffled` may carry a seed (`shuffled:7`).
SCHEDULES = ("ascending", "descending", "shuffled[:seed]")

_SCHEDULE = re.compile(r"(?P<order>ascending|descending|shuffled)(?::(?P<seed>\d+))?")


@dataclass(frozen=True)
class RunCase:
    """The concrete values one run of a submission gets.

    `inputs` maps each problem input to its array; `outputs` maps each output to its
    `(shape, dtype)` (numpy dtype names; `"bfloat16"` is `ml_dtypes.bfloat16`); `dims` and
    `scalars` are the problem's named sizes and scalar parameters (`rows`, `eps`, ...).

    Outputs (and poisoned scratch, and the bytes around every buffer) start as poison drawn from a
    digest of the case's inputs and output specs (`buffers.case_digest`; `buffers.initial_output`
    gives an output's): the same case gets the same bytes in any batch, on either backend.

    `timeout_s`, when set, is this case's own time limit (the batch's `timeout_s` otherwise): the
    reward gate gives each input a measured multiple of the slowest correct kernel's time on it.
    """

    inputs: dict[str, np.ndarray]
    outputs: dict[str, tuple[tuple[int, ...], str]]
    dims: dict[str, int] = field(default_factory=dict)
    scalars: dict[str, float] = field(default_factory=dict)
    timeout_s: float | None = None


def parse_schedule(schedule: str) -> tuple[str, int | None]:
    """Split a thread-order name into (order, seed); raise ValueError for anything else.

    >>> parse_schedule("ascending")
    ('ascending', None)
    >>> parse_schedule("shuffled:7")
    ('shuffled', 7)
    >>> parse_schedule("random")
    Traceback (most recent call last):
    ...
    ValueError: unknown schedule 'random'; expected 'ascending', 'descending' or 'shuffled[:seed]'
    """
    match = _SCHEDULE.fullmatch(schedule) if isinstance(schedule, str) else None
    if match is None or (match["seed"] is not None and match["order"] != "shuffled"):
        raise ValueError(f"unknown schedule {schedule!r}; expected 'ascending', 'descending' or "
                         "'shuffled[:seed]'")
    return match["order"], None if match["seed"] is None else int(match["seed"])
