"""What one kernel run produced."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Every outcome a run can have. Only `ok` carries meaningful outputs.
OUTCOMES = ("ok", "memory_fault", "sync_error", "data_race", "stateful_kernel", "timeout", "crash",
            "forbidden_syscall")


@dataclass
class RunResult:
    """Outcome of running a compiled kernel on one input set.

    `outputs` holds one numpy array per requested output (poison where the kernel never wrote);
    it is empty when the run did not finish. `message` explains any outcome other than `ok`
    (which launch, block and thread, which buffer); `stdout` is what device `printf` wrote.
    `seconds` is the case's own run time where the backend measures it (the CPU emulator: the
    runner's CPU time, to the kernel clock's tick): what a time envelope is measured from.
    """

    outcome: str
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    message: str = ""
    stdout: str = ""
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}; expected one of {OUTCOMES}")

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"
