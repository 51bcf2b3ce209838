"""The CPU backend: run a submission's launch plan in the sandboxed runner, one child per batch.

Semantics (docs/emulator.md has the table of CUDA behaviour, GPU and emulator):

* Threads of a block run one at a time, in the order the schedule gives: `ascending` (thread 0
  first), `descending`, or `shuffled[:SEED]` (a seeded permutation, different per block). Blocks
  follow the same order. A thread runs until it returns or reaches a barrier or warp collective;
  a barrier releases when every thread still running waits at the same `__syncthreads` (threads
  that returned count as arrived). So a missing barrier shows or hides depending on the order:
  in a tree reduction, a thread that reads `s[tid + stride]` before its partner wrote it is wrong
  under `ascending` and happens to be right under `descending`.
* Warp collectives (`__shfl_*_sync`, `__ballot_sync`, ...) complete when every lane named in the
  mask has arrived; a lane that exited or waits elsewhere is a `sync_error`, as is a divergent
  `__syncthreads`. Reading a lane that does not exist gives all-ones bits (NaN / -1).
* Atomics are plain read-modify-writes: threads never interleave between two instructions, so a
  lost update cannot show as a value here. The race detector (`races`, on by default) finds it
  instead: kernels are built instrumented and a conflicting pair of plain accesses with nothing
  ordering them is a `data_race` under every order; a launch reading `__device__` data that an
  earlier one changed is a `stateful_kernel`; a thread polling a value no running thread can change
  (a wait on another block) is a `sync_error` that says so. docs/emulator.md has the rules.
* Memory: outputs, `poison` scratch and the bytes around every buffer hold poison drawn per case
  (NaN, large finite values, random bits: `buffers.py`); `zero` scratch is zero.
* Numerics: FMA contraction as nvcc's default (-fmad=true): g++ -ffp-contract=fast (-mfma on
  x86-64, where the CPU has FMA; else off, with a warning) fuses a product into the add or
  subtract it feeds, and the __half operators fuse to HFMA; `MUTAGYM_FMA=0` (or
  `build_kernel(fma=False)`) turns it off, as -fmad=false (toolchain.py). __fmul_rn, __fadd_rn and
  atomicAdd's add stay unfused. Sequential per-thread order; the fast intrinsics model the GPU's
  reduced accuracy (see csrc/mg_math.h). Results can still differ from a GPU in the last bits
  (a product with other uses is fused by NVVM but not by g++), never in semantics.
* Faults are outcomes: `memory_fault` (guard page, write to an input, bad pointer, misaligned
  vector access), `sync_error`, `timeout` (the runner's CPU time per case, with a wall-clock cap of
  `WALL_CAP_FACTOR` times it for a starved machine, and a CPU-time limit in the child),
  `crash` (trap, division by zero, stack overflow), `forbidden_syscall` (seccomp killed the child).
* The runner is a child that holds nothing of the host (`start_runner`: no environment, a bare
  argv, descriptors instead of paths; an empty root, `MUTAGYM_EMPTY_ROOT`), and the kernel's code
  shares its process, so what the runner reports is believed only where the runner could have
  written it (runner_reports.py); anything else is the kernel's `crash`. `InfrastructureError`
  comes only from what fails before any code of the submission runs, and from the judge itself.
* Memory: a batch's buffers cost the judge at most `MUTAGYM_BATCH_BYTES` (`batch_budget`), known
  from the plans before anything is allocated; a larger batch runs in several runners.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

from .buffers import DeviceMemory, frozen, judge_bytes
from .cases import RunCase, parse_schedule
from .elf_check import check_kernel_object, guard_variables, kernel_data, static_shared_bytes, writable_data
from .errors import InfrastructureError, LaunchError, SubmissionError
from .instrumented import check_instrumented
from .plan import MAX_DYNAMIC_SHARED_BYTES, resolve_plan
from .races import (SHADOW_BYTES_PER_BYTE, describe_race, describe_spin, describe_state, race_check_enabled,
                    shared_element, source_line, symbol_at)
from .results import RunResult
from .runner_reports import Breach, LineReader, RunnerChannel
from .submission import Submission
from .toolchain import build_kernel, runner_path
from .translate import entry_symbol, translation_unit

_ORDERS = ("ascending", "descending", "shuffled")
FIBER_STACK_BYTES = 64 * 1024
PRINTF_BYTES = 64 * 1024
#: Shared memory of one block, static and dynamic together (what any GPU allows without opt-in).
MAX_SHARED_BYTES = MAX_DYNAMIC_SHARED_BYTES
#: Address space the runner may use beyond the buffers, the fiber stacks and its request: the
#: runner, libc, libm, their heaps and the kernel's object. A run of a small kernel with libm
#: peaks at under 4 MiB of it (VmPeak less the memfd and the stacks, plain and with 1024 fibers);
#: the rest is what a kernel's object with its static arrays may take. An object needing more
#: fails to load: a `crash` naming this limit.
RUNNER_HEADROOM_BYTES = 256 << 20

#: A case's timeout counts the runner's CPU time, not the wall clock: on a loaded machine (a
#: trainer's workers, other jobs) a runner that gets a seventh of a core would otherwise time out
#: correct kernels. Past this many times the timeout in wall-clock time a case ends anyway.
WALL_CAP_FACTOR = 10
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: Bookkeeping ranges the runner takes (csrc/race.h, BOOKKEEPING_CAPACITY): g++'s static guards.
BOOKKEEPING_RANGES = 64
#: Most `__device__` data the runner copies between the checked and the unchecked object of a
#: race-checked kernel (at most twice per watched block); a kernel with more runs every block on
#: the checked object.
SHARED_DATA_LIMIT = 1 << 20
_VOLATILE = re.compile(r"\bvolatile\b")
#: The line a failed device assert prints (mg_libc.h, as CUDA's) before it traps.
_FAILED_ASSERT = re.compile(r"^submission\.cu:\d+: .*Assertion `.*` failed\.$", re.MULTILINE)
#: Who the runner becomes when started as root, before any code of a submission runs ("nobody").
SANDBOX_UID = SANDBOX_GID = 65534
#: The runner's argv[0]: its bare name, not where the cache keeps it.
RUNNER_NAME = "mg_runner"
#: Whether the runner empties its root (see `empty_root_mode`).
EMPTY_ROOT_ENV = "MUTAGYM_EMPTY_ROOT"
#: The judge's memory for one batch's device memory, in bytes (`batch_budget`).
BATCH_BYTES_ENV = "MUTAGYM_BATCH_BYTES"
#: Its default: a few of the largest cases the catalog's domains allow (a split-K matmul of
#: n = 2048 costs about 1.3 GiB with its race shadow), on a machine that runs two judges.
DEFAULT_BATCH_BYTES = 4 << 30
#: Arguments the runner passes to one kernel (csrc/runner.cpp `Launch::args`).
MAX_KERNEL_ARGS = 64
#: How long a runner whose output has ended may take to exit before it is killed (a runner exits
#: as it ends its output; only code that closed its stdout and lives on waits that long).
EXIT_GRACE_S = 5.0


class _ResidentMemory(threading.local):
    """The device memory of this thread's last few batches, kept while their inputs are frozen.

    A kill matrix runs thousands of mutants on the same cases: laying the buffers out, copying
    the inputs in and faulting the pages of a fresh memfd cost the parent as much as comparing
    the outputs. When a batch has the same buffers and the very same read-only inputs as a kept
    one, only its outputs and scratch are reset. A few are kept, not one, because a kill matrix
    task alternates batches (every input; the cheap ones under a second schedule); the least
    recently used go first, past `MAX_KEPT` batches or `MAX_KEPT_BYTES` in all."""

    MAX_KEPT = 4
    MAX_KEPT_BYTES = 512 << 20

    def __init__(self) -> None:
        self.kept: list[DeviceMemory] = []      # least recently used first

    def take(self, plans, inputs) -> DeviceMemory:
        for i, memory in enumerate(self.kept):
            if memory.holds(plans, inputs):
                del self.kept[i]
                memory.reset()
                return memory
        return DeviceMemory(plans, inputs)

    def give_back(self, memory: DeviceMemory) -> None:
        if all(frozen(a) for case in memory.inputs for a in case.values()):
            self.kept.append(memory)
        else:
            memory.close()
        while self.kept and (len(self.kept) > self.MAX_KEPT
                             or sum(m.nbytes for m in self.kept) > self.MAX_KEPT_BYTES):
            self.kept.pop(0).close()


_resident = _ResidentMemory()


class CpuKernel:
    """A submission built for the emulator; `run_batch` runs cases in one sandboxed child."""

    def __init__(self, submission: Submission, *, race_check: bool | None = None):
        self.submission = submission
        self.race_check = race_check_enabled(race_check)
        self._build()
        self.runner = runner_path()

    def _build(self) -> None:
        """Build (or find in the compile cache) and check the objects; again if one was evicted.

        A race-checked kernel has two: the instrumented build runs the blocks the checks watch,
        and a plain build of the same text (the unchecked object) the rest, at full speed, unless
        their data cannot be shared (see `elf_check.kernel_data`), there is too much of it, or the
        text has `volatile` accesses (the checks see a spin on a volatile load only in the
        instrumented build; atomics are seen in both)."""
        unit = translation_unit(self.submission)
        split = self.race_check and not _VOLATILE.search(self.submission.device_text)
        with ThreadPoolExecutor(1) as beside:   # the plain build alongside (g++ is a child process)
            plain = beside.submit(build_kernel, unit, race_check=False) if split else None
            try:
                self._build_checked(unit, plain)
            except SubmissionError:   # a refused text leaves no object behind (see `_checked`)
                if plain is not None and plain.exception() is None:
                    plain.result().unlink(missing_ok=True)
                raise

    def _build_checked(self, unit: str, plain: Future | None) -> None:
        """The checked object, then the unchecked one from *plain* (a build in flight) if usable."""
        self.object_path = self._checked(build_kernel(unit, race_check=self.race_check), self.race_check)
        self.static_shared_bytes = static_shared_bytes(self.object_path)
        if self.static_shared_bytes > MAX_SHARED_BYTES:
            self.object_path.unlink(missing_ok=True)
            raise SubmissionError(f"static __shared__ arrays take {self.static_shared_bytes} bytes; a "
                                  f"block may use at most {MAX_SHARED_BYTES}")
        self.constant_arrays = self._constant_arrays()
        # The runner's bytes in the kernel's data, not its state: g++'s guards, and the __constant__
        # arrays it fills from inputs before each case.
        self.bookkeeping = (list(self.constant_arrays.values()) + guard_variables(self.object_path))[:BOOKKEEPING_RANGES]
        self.unchecked_path, self.shared_data = None, ()
        if plain is None:
            return
        data = kernel_data(self.object_path)
        if data is None or sum(size for _, _, size in data) > SHARED_DATA_LIMIT:
            return
        unchecked = self._checked(plain.result())
        if kernel_data(unchecked) == data:
            self.unchecked_path, self.shared_data = unchecked, tuple((address, size) for _, address, size in data)

    def _constant_arrays(self) -> dict[str, tuple[int, int]]:
        """(address, size) in the object of each `__constant__` array the launch block binds."""
        data = writable_data(self.object_path)
        for binding in self.submission.constants:
            if binding.symbol not in data:
                raise SubmissionError(f"constant {binding.symbol!r}: the code declares no __constant__ array "
                                      "of that name at namespace scope", line=binding.line)
        return {b.symbol: data[b.symbol] for b in self.submission.constants}

    def _constant_fault(self, plan) -> RunResult | None:
        """A memory_fault when a bound `__constant__` array cannot hold its input, as on a GPU."""
        for copy in plan.constants:
            size = self.constant_arrays[copy.symbol][1]
            if copy.nbytes > size:
                return RunResult("memory_fault", message=f"__constant__ {copy.symbol!r} holds {size} bytes; "
                                                         f"its input has {copy.nbytes}")
        return None

    @staticmethod
    def _checked(path: Path, instrumented: bool = False) -> Path:
        """*path* once the object wall accepts it (and, for the race-checked object, the check
        that every function is *instrumented*); a refused object is dropped from the compile
        cache, so that hostile texts cannot fill the disk with objects of up to the size cap each."""
        try:
            check_kernel_object(path)
            if instrumented:
                check_instrumented(path)
        except SubmissionError:
            path.unlink(missing_ok=True)
            raise
        return path

    def run_batch(self, cases: Sequence[RunCase], *, schedule: str = "ascending",
                  timeout_s: float = 10.0) -> list[RunResult]:
        return self.run_schedules(cases, (schedule,), timeout_s=timeout_s)[schedule]

    def run_schedules(self, cases: Sequence[RunCase], schedules: Sequence[str], *,
                      timeout_s: float = 10.0) -> dict[str, list[RunResult]]:
        """`run_batch` under each schedule, laying the buffers out and copying the inputs once."""
        orders = [parse_schedule(s) for s in schedules]
        plans = [resolve_plan(self.submission, c.inputs, c.outputs, c.dims, c.scalars) for c in cases]
        for plan in plans:
            for launch in plan.launches:
                if launch.shared_bytes + self.static_shared_bytes > MAX_SHARED_BYTES:
                    raise LaunchError(
                        f"launch {launch.index} ({launch.kernel}) asks for {launch.shared_bytes} bytes of "
                        f"dynamic shared memory on top of {self.static_shared_bytes} static; a block may "
                        f"use at most {MAX_SHARED_BYTES}")
                if len(launch.args) > MAX_KERNEL_ARGS:
                    raise LaunchError(f"launch {launch.index} ({launch.kernel}) passes {len(launch.args)} "
                                      f"arguments; the emulator passes at most {MAX_KERNEL_ARGS} to a kernel")
        faults = {i: f for i, plan in enumerate(plans) if (f := self._constant_fault(plan)) is not None}
        if faults:   # the other cases run without them
            rest = [c for i, c in enumerate(cases) if i not in faults]
            runs = self.run_schedules(rest, schedules, timeout_s=timeout_s) if rest else {s: [] for s in schedules}
            return {s: [replace(faults[i]) if i in faults else next(done) for i in range(len(cases))]
                    for s, done in ((s, iter(runs[s])) for s in schedules)}
        chunks = self._memory_chunks(plans)
        if len(chunks) > 1:   # each chunk within the judge's memory budget, one after the other
            runs = [self.run_schedules([cases[i] for i in chunk], schedules, timeout_s=timeout_s) for chunk in chunks]
            return {s: [r for run in runs for r in run[s]] for s in schedules}
        if not self.object_path.exists() or (self.unchecked_path and not self.unchecked_path.exists()):
            # evicted from the compile cache since it was built
            self._build()
        memory = _resident.take(plans, [c.inputs for c in cases])
        try:
            runs = {}
            for schedule, (order, seed) in zip(schedules, orders):
                if runs:
                    memory.reset()
                runs[schedule] = self._run_all(cases, plans, memory, _ORDERS.index(order), seed or 0,
                                               _case_timeouts(cases, timeout_s))
            return runs
        finally:
            _resident.give_back(memory)

    def _memory_chunks(self, plans: list) -> list[range]:
        """The cases in consecutive runs whose device memory costs the judge at most `batch_budget()`
        (`buffers.judge_bytes`), known before anything is allocated. A case over the budget alone
        runs alone when its inputs and outputs are what takes the memory (the judge's choice), and
        is the kernel's LaunchError when its scratch is."""
        budget = batch_budget()
        shadow = SHADOW_BYTES_PER_BYTE if self.race_check else 0
        chunks, first, used = [], 0, 0
        for i, plan in enumerate(plans):
            cost = judge_bytes([plan], shadow)
            if cost > budget:
                data = replace(plan, buffers=tuple(b for b in plan.buffers if b.role != "scratch"))
                if judge_bytes([data], shadow) <= budget:
                    raise LaunchError(f"with its scratch buffers a case takes {cost:,} bytes of the judge's "
                                      f"memory ({judge_bytes([data], shadow):,} without them); the judge's "
                                      f"memory budget for one evaluation is {budget:,} bytes "
                                      f"({BATCH_BYTES_ENV})")
            if i > first and used + cost > budget:
                chunks.append(range(first, i))
                first, used = i, 0
            used += cost
        return [*chunks, range(first, len(plans))]

    def _run_all(self, cases, plans, memory: DeviceMemory, kind: int, seed: int,
                 timeouts: list[float]) -> list[RunResult]:
        results: list[RunResult | None] = [None] * len(cases)
        printed: dict[int, str] = {}
        start = 0
        while start < len(cases):
            with self._object_files() as objects:
                request = self._request(plans, memory, objects, start, kind, seed, timeouts)
                self._run_child(request, (memory.fd, *objects), memory, start, results, printed, timeouts)
            if results[start] is None:   # every way a child ends gives its first case a result
                raise InfrastructureError(f"the kernel runner gave case {start} no result")
            while start < len(cases) and results[start] is not None:
                start += 1
        for i, result in enumerate(results):
            result.stdout = printed.get(i, "")
            if result.outcome == "crash" and (failed := _FAILED_ASSERT.search(result.stdout)):
                result.message = f"a device assert failed: {failed[0]}"
            if result.ok:
                result.outputs = {name: memory.read(i, name) for name in cases[i].outputs}
        return results

    @contextlib.contextmanager
    def _object_files(self):
        """The kernel's objects (checked, then unchecked if any) open for reading, for one child:
        the runner is handed descriptors, never a path of the host."""
        paths = [self.object_path] + ([self.unchecked_path] if self.unchecked_path else [])
        fds = []
        try:
            for path in paths:
                try:
                    fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
                except OSError as err:
                    raise InfrastructureError(f"the kernel's built object cannot be opened ({err.strerror})") from None
            yield tuple(fds)
        finally:
            for fd in fds:
                os.close(fd)

    # ------------------------------------------------------------------ request
    def _request(self, plans, memory: DeviceMemory, objects: tuple[int, ...], start: int, kind: int,
                 seed: int, timeouts: list[float]) -> str:
        max_threads = max(l.block[0] * l.block[1] * l.block[2] for p in plans for l in p.launches)
        cpu_seconds = int(timeouts[start] + sum(timeouts[start:])) + 2    # loading, then every case
        lines = [
            "mutagym-run 1",
            f"object {objects[0]}",
            f"memfd {memory.fd} {memory.size}",
            f"fibers {int(self.submission.uses_barriers)}",
            f"schedule {kind} {seed}",
            f"stack {FIBER_STACK_BYTES}",
            f"cpu_seconds {cpu_seconds}",
            f"max_threads {max_threads}",
            f"printf_bytes {PRINTF_BYTES}",
            "address_space {address_space}",   # filled in below, once the request's size is known
            f"identity {SANDBOX_UID} {SANDBOX_GID}",
            f"root {empty_root_mode()}",
            f"race {int(self.race_check)}",
            f"bookkeeping {len(self.bookkeeping)}", *(f"{a} {n}" for a, n in self.bookkeeping),
            f"unchecked {objects[1] if len(objects) > 1 else '-'}",
            f"shared_data {len(self.shared_data)}", *(f"{a} {n}" for a, n in self.shared_data),
            f"protect {len(memory.protect)}",
            *(f"{o} {n} {m}" for o, n, m in memory.protect),
            f"cases {start} {len(plans) - start}",
        ]
        for case in range(start, len(plans)):
            plan = plans[case]
            lines.append(f"case {len(plan.launches)} {len(plan.constants)} {memory.salt(case)}")
            lines += [f"constant {self.constant_arrays[c.symbol][0]} {memory.address_args(case, c.input)} {c.nbytes}"
                      for c in plan.constants]
            for launch in plan.launches:
                args = []
                for arg in launch.args:
                    if arg.kind == "buffer":
                        args.append(f"b {memory.address_args(case, arg.buffer)}")
                    else:
                        args.append(f"v {int.from_bytes(arg.value, 'little')}")
                lines.append(" ".join([
                    "launch", entry_symbol(launch.kernel), *map(str, launch.grid), *map(str, launch.block),
                    str(launch.shared_bytes), str(len(args)), *args]))
        # The runner's address space: the buffers, one guarded and coloured stack per thread (as the
        # runner lays them out), its copies of the request (the read buffer doubles: up to 4x its
        # size) and ~1 KiB per launch of parsed cases, and the fixed headroom.
        stride = 4096 + -(-FIBER_STACK_BYTES // 4096) * 4096 + 4096
        stacks = stride * max_threads if self.submission.uses_barriers else 0
        text = "\n".join(lines) + "\n"
        launches = sum(len(plans[case].launches) for case in range(start, len(plans)))
        shadow = SHADOW_BYTES_PER_BYTE * memory.size if self.race_check else 0
        address_space = memory.size + shadow + stacks + 4 * len(text) + 2048 * launches + RUNNER_HEADROOM_BYTES
        return text.replace("address_space {address_space}", f"address_space {address_space}", 1)

    # ------------------------------------------------------------------ child
    def _run_child(self, request: str, pass_fds: tuple[int, ...], memory: DeviceMemory, start: int,
                   results: list, printed: dict, timeouts: list[float]) -> None:
        """Run cases from *start* in one runner, filling *results* and *printed* from what it reports
        and how it ends (runner_reports.py says which of its lines are believed). Returns with a
        result for case *start* at least, or raises InfrastructureError for mutagym's own failure."""
        proc = start_runner(self.runner, pass_fds, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
        channel = RunnerChannel(start, len(results), PRINTF_BYTES)
        ended_by_us = False   # killed for a timeout or a breach, or told why it stopped
        faulted = False       # the runner exits after reporting a fault; the batch resumes
        try:
            proc.stdin.write(request.encode())
            proc.stdin.close()
            reader = LineReader(proc.stdout.fileno())
            deadline = time.monotonic() + max(timeouts[start], 5.0) + 10.0  # set-up, then per phase
            budget = _CaseBudget(proc.pid, timeouts[start])
            while True:
                line = reader.next_line(deadline)
                if line is None and channel.kernel_may_run and (later := budget.extended()) is not None:
                    deadline = later       # the runner was starved of CPU, not stuck
                    continue
                if line is None:      # timed out
                    if not channel.kernel_may_run:
                        raise InfrastructureError("the kernel runner did not start in time")
                    os.killpg(proc.pid, signal.SIGKILL)
                    ended_by_us = True
                    if channel.phase == "loading":   # the objects load alike in every child
                        _fill_rest(results, channel.next_case, RunResult(
                            "timeout", message="the kernel's object did not finish loading"))
                    else:
                        results[channel.next_case] = RunResult("timeout", message=budget.describe(),
                                                               seconds=budget.used())
                    break
                if line == b"":       # end of output: the child exited
                    break
                try:
                    report = channel.read(line)
                    if report.kind == "printf":
                        printed[report.case] = channel.printed(reader.read_exact(report.number + 1, deadline))
                except Breach as breach:
                    os.killpg(proc.pid, signal.SIGKILL)
                    ended_by_us = True
                    for case in channel.reported:
                        results[case] = RunResult("crash", message=str(breach))
                    _fill_rest(results, channel.next_case, RunResult("crash", message=str(breach)))
                    break
                if report.kind in ("loading", "ready"):
                    if report.kind == "loading":
                        _note_root(channel.root)
                    deadline = budget.restart(timeouts[channel.next_case])
                elif report.kind == "result":
                    results[report.case] = self._result(report.outcome, report.detail, memory, report.case)
                    results[report.case].seconds = budget.used()
                    faulted = report.outcome != "ok"
                    if channel.next_case < len(results):
                        deadline = budget.restart(timeouts[channel.next_case])
                elif report.kind == "unloadable":   # the kernel's object did not load: the same in every child
                    ended_by_us = True
                    reason = f": {report.detail}" if report.detail else ""
                    _fill_rest(results, channel.next_case, RunResult(
                        "crash", message=f"the kernel's object could not be loaded within the sandbox's "
                                         f"limits ({report.number >> 20} MiB of address space){reason}"))
        finally:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
            lingered = not _exits_within(proc, EXIT_GRACE_S)
            if lingered:   # its stdout closed (load-time code may close it) but it lives on
                os.killpg(proc.pid, signal.SIGKILL)
            status = proc.wait()
            stderr = proc.stderr.read(1 << 16).decode(errors="replace")
            proc.stdout.close()
            proc.stderr.close()
        if ended_by_us or faulted or channel.next_case >= len(results):
            return
        if not channel.kernel_may_run:
            raise InfrastructureError(f"the kernel runner exited with status {status} before loading the "
                                      f"kernel: {stderr[-2000:]}")
        if lingered:
            ended = RunResult("crash", message="the kernel's process closed its report channel and did not exit")
        elif status in (-signal.SIGKILL, -signal.SIGSYS):   # strict mode kills, a filter's KILL_PROCESS is SIGSYS
            ended = RunResult("forbidden_syscall", message="the sandbox killed the kernel for a forbidden system call")
        elif status < 0:
            ended = RunResult("crash", message=f"the kernel died on signal {-status}")
        else:
            ended = RunResult("crash", message=f"the kernel's process exited (status {status}) before it "
                                               f"reported this case")
        if channel.phase == "loading":   # while the objects load: the same in every child
            _fill_rest(results, channel.next_case, ended)
        else:
            results[channel.next_case] = ended

    def _result(self, outcome: str, detail: str, memory: DeviceMemory, case: int) -> RunResult:
        if outcome == "data_race":
            def locate(space: str, number: int) -> str:
                if space == "offset":
                    return memory.locate(case, number)
                if space == "static":
                    return shared_element(self.object_path, number)
                return f"byte {number} of dynamic shared memory"
            return RunResult(outcome, message=describe_race(
                detail, locate, lambda pc: source_line(self.object_path, pc)))
        if outcome == "stateful_kernel":
            return RunResult(outcome, message=describe_state(
                detail, lambda address: symbol_at(self.object_path, address)))
        if outcome == "sync_error" and detail.startswith("spin "):
            return RunResult(outcome, message=describe_spin(detail, lambda byte: memory.locate(case, byte)))
        if outcome in ("ok", "sync_error", "timeout"):
            return RunResult(outcome, message=detail)
        return _describe_fault(outcome, detail, memory, case)


def _describe_fault(outcome: str, detail: str, memory: DeviceMemory, case: int) -> RunResult:
    """Turn the runner's terse fault line into a message naming the buffer and the thread."""
    head, _, where = detail.partition(" where ")
    words = head.split()
    fields = dict(zip(words[::2], words[1::2]))
    signal_number = int(fields.get("signal", 0))
    access = fields.get("access", "unknown")
    thread = f" in {where}" if where else ""
    if signal_number == signal.SIGFPE:
        return RunResult("crash", message=f"arithmetic exception (integer division by zero?){thread}")
    if signal_number in (signal.SIGILL, signal.SIGTRAP):
        return RunResult("crash", message=f"trap (__trap() or an illegal instruction){thread}")
    if signal_number == signal.SIGABRT:
        return RunResult("crash", message=f"abort{thread}")
    if "stack" in fields:
        if int(fields["stack"]) < 4096:
            return RunResult("crash", message=f"stack overflow (recursion too deep?){thread}")
        return RunResult("memory_fault", message=f"invalid {access} on a thread stack{thread}")
    if "offset" in fields:
        target = memory.locate(case, int(fields["offset"]))
        if "protected" in words and target.startswith("element"):
            return RunResult("memory_fault", message=f"write to {target}: inputs are read-only{thread}")
        return RunResult("memory_fault", message=f"{access} {target}{thread}")
    if "misaligned" in words:
        return RunResult("memory_fault", message=f"misaligned {access}{thread}")
    if "outside" in fields:   # a wild address, told relative to device memory so runs agree
        delta = int(fields["outside"])
        where = (f"{delta - memory.size} bytes past the end of" if delta >= memory.size
                 else f"{-delta} bytes before")
        return RunResult("memory_fault", message=f"invalid {access} {where} device memory (outside every "
                                                 f"buffer){thread}")
    address = fields.get("address", "?")
    hint = " (a null pointer, or a misaligned vector load)" if address == "0x0" else ""
    return RunResult("memory_fault", message=f"invalid {access} at address {address}{hint}{thread}")


def start_runner(runner: Path, pass_fds: tuple[int, ...], **streams) -> subprocess.Popen:
    """The runner as a child holding nothing of the host but what it is handed: an empty environment,
    an argv of its bare name, the root folder as its working folder, no descriptors but its standard
    streams and *pass_fds*, a session of its own (so a timeout kills everything it started)."""
    return subprocess.Popen([RUNNER_NAME], executable=str(runner), env={}, cwd="/", pass_fds=pass_fds,
                            start_new_session=True, **streams)


def batch_budget() -> int:
    """The judge's memory budget for one batch's device memory: `MUTAGYM_BATCH_BYTES`, else
    `DEFAULT_BATCH_BYTES`. A larger batch runs in several runners, one after the other."""
    value = os.environ.get(BATCH_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_BATCH_BYTES
    if not value.isdigit() or int(value) <= 0:
        raise InfrastructureError(f"{BATCH_BYTES_ENV}={value!r}: a positive number of bytes")
    return int(value)


def empty_root_mode() -> int:
    """What the runner is told of its root (`MUTAGYM_EMPTY_ROOT`): 1 an empty root where the machine
    allows one (unset, `auto`), 2 an empty root or no run (`1`, `on`, `require`: an InfrastructureError
    where it cannot be had), 0 the host's root (`0`, `off`: only to measure what the empty root costs)."""
    value = os.environ.get(EMPTY_ROOT_ENV, "auto").strip().lower()
    modes = {"auto": 1, "": 1, "1": 2, "on": 2, "require": 2, "0": 0, "off": 0}
    if value not in modes:
        raise InfrastructureError(f"{EMPTY_ROOT_ENV}={value!r}: use auto, 1/on/require or 0/off")
    return modes[value]


_warned_host_root = False


def _note_root(root: str) -> None:
    """Warn once per process when a runner asked for an empty root got the host's."""
    global _warned_host_root
    if root == "host-root" and empty_root_mode() == 1 and not _warned_host_root:
        _warned_host_root = True
        warnings.warn("the kernel runner could not empty its root (this machine refuses it user or mount "
                      "namespaces): code of a kernel's object that runs while it loads can read the files "
                      f"its identity may read. {EMPTY_ROOT_ENV}=1 refuses to judge without an empty root; "
                      "docs/threat-model.md says what the machine needs", RuntimeWarning, stacklevel=2)


def _exits_within(proc: subprocess.Popen, seconds: float) -> bool:
    """Whether *proc* exits within *seconds*, waited for on a pidfd (`Popen.wait` with a timeout
    polls with sleeps of 0.5 ms and more: a millisecond a batch for a runner that exits at once)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except ProcessLookupError:   # reaped already
        return True
    try:
        return bool(select.select([pidfd], [], [], seconds)[0])
    finally:
        os.close(pidfd)


def _fill_rest(results: list, first: int, result: RunResult) -> None:
    """*result* (a copy each) for every case from *first* on."""
    for case in range(first, len(results)):
        results[case] = replace(result)


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of process *pid* (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS    # utime, stime (fields 14, 15)


def _case_timeouts(cases: Sequence[RunCase], timeout_s: float) -> list[float]:
    """Each case's time limit: its own (`RunCase.timeout_s`), else the batch's."""
    timeouts = [timeout_s if c.timeout_s is None else c.timeout_s for c in cases]
    if not all(t > 0 for t in timeouts):
        raise ValueError(f"a case's timeout must be positive, got {min(timeouts)!r}")
    return timeouts


class _CaseBudget:
    """The timeout of one phase of a run (loading, then each case) in the runner's CPU time."""

    def __init__(self, pid: int, timeout_s: float):
        self.pid = pid
        self.restart(timeout_s)

    def restart(self, timeout_s: float) -> float:
        """Start a phase of `timeout_s` now; returns its first (wall-clock) deadline."""
        self.timeout_s = timeout_s
        self.wall0, self.cpu0 = time.monotonic(), _cpu_seconds(self.pid) or 0.0
        return self.wall0 + self.timeout_s

    def extended(self) -> float | None:
        """A later deadline if the runner used less CPU than the timeout in this phase and the
        wall-clock cap is not reached; None when the phase has had its time."""
        used = self.used()
        now, cap = time.monotonic(), self.wall0 + WALL_CAP_FACTOR * self.timeout_s
        if used >= self.timeout_s or now >= cap:
            return None
        return min(cap, now + max(self.timeout_s - used, 0.25))

    def used(self) -> float:
        """CPU seconds the runner used in this phase so far."""
        return (_cpu_seconds(self.pid) or self.cpu0) - self.cpu0

    def describe(self) -> str:
        """Why the phase timed out, for the `timeout` outcome's message."""
        used = self.used()
        if used >= self.timeout_s:
            return f"no result within {self.timeout_s:g} s (an infinite loop, or a launch too large to finish)"
        return (f"no result within {WALL_CAP_FACTOR * self.timeout_s:g} s of wall-clock time, of which the "
                f"runner got {used:.1f} s of CPU (the machine is overloaded)")
