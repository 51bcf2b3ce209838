"""What the kernel runner may report, and when: every line of its stdout is a claim the judge checks.

The runner (csrc/runner.cpp) shares its address space with the kernel's code, and that code can
reach `write` through the runner's own symbols. So from the moment the runner says `loading`, any
line on its stdout may be the kernel's, and what decides an outcome cannot be what the child
says alone. The judge is the runner's supervisor: it starts it, feeds it, watches its CPU time and
the wall clock, observes its exit and its signal, and believes a line only where the runner could
have written it, at that point of the run:

| phase | what the runner writes | anything else |
| --- | --- | --- |
| set-up (no code of the submission has run) | `loading <root>` (the jail is closed), `fatal <why>` | mutagym's own failure: `InfrastructureError` |
| loading (the objects are being mapped and bound) | `ready`, `unloadable <bytes> <why>` | a breach |
| running | case after case, in order, once each: at most one `printf <case> <bytes>` with that many bytes and a newline, then `result <case> <outcome> <detail>`; after a fault, or the last case, nothing | a breach |

A line is believed whole or not at all: at most `MAX_LINE_BYTES` long, its case the one the runner
is running, its outcome one the runner reports, its detail in that outcome's grammar (`DETAILS`:
fixed words and numbers, so no text of the kernel's reaches a message; what it printed travels
apart, as its `stdout`). A breach is the kernel's `crash` on every case of that child, those it
already reported included: a child that broke the protocol is believed on nothing.

What the channel cannot give: a line the runner would have written is well formed when the kernel
writes it too. A kernel that reaches the runner's symbols can report the case it is in as `ok` and
end its process before the runner's own checks (races, state, spins) report it; the parent then
compares its outputs as for any `ok`. docs/threat-model.md says what stands in its way.
"""

from __future__ import annotations

import os
import re
import selectors
import time
from dataclasses import dataclass

from .errors import InfrastructureError

#: The longest line the runner writes (its line buffer, csrc/runner.cpp `Line`, holds 1 KiB).
MAX_LINE_BYTES = 1024

_N = r"\d{1,20}"
_I = r"-?\d{1,20}"
_HEX = r"0x[0-9a-f]{1,16}"
_THREAD = rf"\({_N},{_N},{_N}\)"
_WHERE = rf" where launch {_I} block {_THREAD} thread {_THREAD}"
#: The warp collectives a sync error names (csrc/runner.cpp `kind_name`).
_COLLECTIVE = ("(?:__syncwarp|__shfl_sync|__shfl_up_sync|__shfl_down_sync|__shfl_xor_sync|__ballot_sync|"
               "__any_sync|__all_sync|__match_any_sync|__match_all_sync|__reduce_add_sync|__reduce_min_sync|"
               "__reduce_max_sync|__reduce_and_sync|__reduce_or_sync|__reduce_xor_sync|__activemask|"
               "warp collective)")
#: What the runner says of a barrier or a warp collective that cannot complete (`fail_sync`).
_SYNC = "|".join((
    "a barrier was reached in a kernel run without fibers",
    "a warp collective was reached in a kernel run without fibers",
    rf"{_COLLECTIVE} with width {_I} \(must be a power of two <= 32\) in thread {_THREAD}",
    rf"{_COLLECTIVE} called by lane {_N} whose bit is not in mask {_HEX} \(thread {_THREAD}\)",
    rf"{_COLLECTIVE} waits for lane {_N} of warp {_N} in mask {_HEX}, which has already exited",
    rf"divergent __syncthreads: thread {_THREAD} waits at line {_I}, thread {_THREAD} at line {_I}",
    rf"deadlock: {_N} threads wait at __syncthreads, {_N} at warp collectives, {_N} have exited"
    rf"(?:; e\.g\. thread {_THREAD} waits in {_COLLECTIVE} with mask {_HEX})?",
))
#: A fault the signal handler reports (`on_fault`).
_FAULT = (rf"signal {_N} access (?:read|write|unknown)(?: offset {_N}| stack {_N}| outside {_I}| address {_HEX})?"
          rf"(?: protected)?(?: misaligned)?(?:{_WHERE})?")
#: The detail of each outcome a `result` line may carry, in full.
DETAILS = {
    "ok": re.compile(""),
    "memory_fault": re.compile(_FAULT),
    "crash": re.compile(_FAULT),
    "timeout": re.compile(rf"cpu time limit exceeded(?:{_WHERE})?"),
    "sync_error": re.compile(rf"launch {_I} block {_THREAD}: (?:{_SYNC})"
                             rf"|spin (?:offset {_N}|elsewhere 0) count {_N}{_WHERE}"),
    "data_race": re.compile(rf"(?:write-write|write-read|read-write) (?:offset|static|dynamic) {_N} pc {_N} "
                            rf"other {_THREAD} block (?:{_THREAD}|\(another\)){_WHERE}"),
    "stateful_kernel": re.compile(rf"data {_N}{_WHERE}"),
}
_RESULT = re.compile(rf"result ({_N}) ([a-z_]+)(?: (.*))?")
_PRINTF = re.compile(rf"printf ({_N}) ({_N})")
_UNLOADABLE = re.compile(rf"unloadable ({_N}) (.{{0,200}})")
#: Why ld.so refused an object, as the runner passes it on: an error number's text, or these.
_LOADER_REASONS = frozenset({os.strerror(n) for n in range(1, 134)} | {
    "failed to map segment from shared object", "cannot map zero-fill pages",
    "cannot change memory protections", "cannot apply additional memory protection after relocation"})


class Breach(Exception):
    """The runner's channel said what the runner could not have said there: the kernel's doing.
    The message is the judge's own words, never the line."""


@dataclass(frozen=True)
class Report:
    """One believed line: *kind* is `loading`, `ready`, `printf`, `result` or `unloadable`."""

    kind: str
    case: int = -1
    outcome: str = ""
    detail: str = ""
    number: int = 0     # printf: the bytes that follow; unloadable: the address space


class RunnerChannel:
    """The protocol's state for one runner child that runs cases `first` to `end - 1`."""

    def __init__(self, first: int, end: int, printf_bytes: int):
        self.phase = "setup"
        self.next_case = first
        self.end = end
        self.printf_bytes = printf_bytes
        self.root = ""           # what `loading` said: `empty-root` or `host-root`
        self.reported: list[int] = []
        self._printed_case = -1  # the case whose printf line came last
        self._payload = 0        # bytes of printed text still to come after a printf line
        self._over = False       # a fault or the last case was reported: the runner exits now

    @property
    def kernel_may_run(self) -> bool:
        """Whether the submission's code may have run: everything said from here on may be its."""
        return self.phase != "setup"

    def read(self, line: bytes) -> Report:
        """The report *line* (without its newline) makes, or Breach (InfrastructureError before the
        submission's code could run: the runner's own failure)."""
        if self.phase == "setup":
            return self._setup(line)
        if len(line) > MAX_LINE_BYTES or self._payload or self._over:
            raise Breach("the kernel wrote to the runner's report channel")
        try:
            text = line.decode("ascii")
        except UnicodeDecodeError:
            raise Breach("the kernel wrote to the runner's report channel") from None
        if self.phase == "loading":
            return self._loading(text)
        return self._running(text)

    def printed(self, payload: bytes) -> str:
        """The text of the printf line just read, from its *payload* (its bytes and a newline)."""
        if len(payload) != self._payload + 1 or not payload.endswith(b"\n"):
            raise Breach("the kernel wrote to the runner's report channel")
        self._payload = 0
        return payload[:-1].decode(errors="replace")

    def _setup(self, line: bytes) -> Report:
        text = line.decode(errors="replace")
        if text in ("loading empty-root", "loading host-root"):
            self.phase, self.root = "loading", text.split()[1]
            return Report("loading")
        if text.startswith("fatal "):
            raise InfrastructureError(f"the kernel runner failed: {text[:MAX_LINE_BYTES]}")
        raise InfrastructureError(f"the kernel runner said {text[:200]!r} while setting up")

    def _loading(self, text: str) -> Report:
        if text == "ready":
            self.phase = "running"
            return Report("ready")
        if m := _UNLOADABLE.fullmatch(text):
            self._over = True
            return Report("unloadable", detail=m[2] if m[2] in _LOADER_REASONS else "", number=int(m[1]))
        raise Breach("the runner could not set up the kernel's object, or something else wrote to its "
                     "report channel while the object was loading")

    def _running(self, text: str) -> Report:
        if m := _PRINTF.fullmatch(text):
            case, size = int(m[1]), int(m[2])
            if case != self.next_case or case == self._printed_case or not 0 < size <= self.printf_bytes:
                raise Breach("the kernel wrote to the runner's report channel")
            self._printed_case, self._payload = case, size
            return Report("printf", case=case, number=size)
        m = _RESULT.fullmatch(text)
        if not m or int(m[1]) != self.next_case or m[2] not in DETAILS:
            raise Breach("the kernel wrote to the runner's report channel")
        case, outcome, detail = int(m[1]), m[2], m[3] or ""
        if not DETAILS[outcome].fullmatch(detail):
            raise Breach("the kernel wrote to the runner's report channel")
        self.reported.append(case)
        self.next_case += 1
        self._over = outcome != "ok" or self.next_case == self.end
        return Report("result", case=case, outcome=outcome, detail=detail)


class LineReader:
    """Reads lines and byte runs from a pipe with a deadline, without blocking past it, and never
    holds more than one line's worth of bytes waiting for a newline."""

    def __init__(self, fd: int, max_line: int = MAX_LINE_BYTES):
        self.fd = fd
        self.max_line = max_line
        self.buffer = b""
        self.eof = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)

    def _fill(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self.selector.select(remaining):
            return False
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.eof = True
        self.buffer += chunk
        return True

    def next_line(self, deadline: float) -> bytes | None:
        """The next line without its newline; b"" at end of output; None past the deadline. A run
        of more than `max_line` bytes without a newline comes back as it is, too long to be a line."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > self.max_line:
                rest, self.buffer = self.buffer, b""
                return rest
            if self.eof:
                rest, self.buffer = self.buffer, b""
                return rest or b""
            if not self._fill(deadline):
                return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def read_exact(self, n: int, deadline: float) -> bytes:
        """*n* bytes, or fewer at end of output or past the deadline."""
        while len(self.buffer) < n and not self.eof:
            if not self._fill(deadline):
                break
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data
