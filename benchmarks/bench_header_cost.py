"""What the emulation header costs each kernel build: this tree's runtime/csrc against a baseline's (issue 16).

Recorded results: benchmarks/README.md ("Emulation header cost (issue 16)"). Run:

    python benchmarks/bench_header_cost.py                  # every substrate, plain builds
    python benchmarks/bench_header_cost.py --count 15 --race

Issue 16 asks that the median substrate's compile time stay within 1.2x while the header grows
(cooperative groups, directed rounding, the C library). Kernels build with g++ and the emulation
header as a precompiled header (`toolchain.header_path`), so both headers are measured that way:
`runtime/csrc` of `--baseline` (extracted with `git archive`) and of this tree each get a `.gch`
built with the product's flags (`toolchain.kernel_flags()`, plus `RACE_FLAGS` for the instrumented
build), checked to be used (g++ `-H` prints `!` before a precompiled header it reads). Each
substrate's translation unit (`translate.translation_unit` of `parse_submission`, as the CPU
backend builds it) is then compiled with each header, A then B for one kernel and B then A for the
next, so load from others on this machine falls on both alike; `--repeats` rounds of that, and a
kernel's time is its least over the rounds. A build is the command
`toolchain.build_kernel` runs, in a bounded child under `KERNEL_LIMITS`: one g++ step plain, three
with `--race` (compile instrumented, objcopy out the sanitizer's constructor, link). The current
header only can build code that uses what it added; a substrate either header refuses is skipped
and named.

A second table times NVRTC (`nvrtc.nvrtc_compile`, cold: a unique comment per run, so the
in-process cache misses) on a warp-and-block reduction written with `<cooperative_groups.h>`,
the same written with intrinsics, and that with the header included but unused (the cost of
reading it), and the emulator's build of each.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mutagym.runtime.bounded import private_dir, run_bounded
from mutagym.runtime.errors import CompileError
from mutagym.runtime.nvrtc import nvrtc_compile, nvrtc_version
from mutagym.runtime.races import RACE_FLAGS
from mutagym.runtime.submission import parse_submission
from mutagym.runtime.toolchain import (CSRC, EMULATION_HEADER, KERNEL_LIMITS, compiler, context_object,
                                       kernel_build_steps, kernel_flags)
from mutagym.runtime.translate import translation_unit

REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.2


# --------------------------------------------------------------------------------------------
# Settings


@dataclass
class Settings:
    baseline: str = "226db59"
    """The commit whose runtime/csrc is the baseline header (226db59: before issue 16)."""
    count: int | None = None
    """Substrates to build, evenly spaced over the sorted catalog; None: all of them."""
    race: bool = False
    """Also time the instrumented (race-checked) build, each header with its own `.gch`."""
    repeats: int = 3
    """Interleaved rounds over the substrates; a kernel's time is its least (the least disturbed)."""
    nvrtc_runs: int = 5
    """Cold compiles of each cooperative-groups table kernel, per compiler."""


def parse_settings() -> Settings:
    defaults = Settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=defaults.baseline, help=Settings.baseline.__doc__)
    parser.add_argument("--count", type=int, default=defaults.count, help=Settings.count.__doc__)
    parser.add_argument("--race", action="store_true", help=Settings.race.__doc__)
    parser.add_argument("--repeats", type=int, default=defaults.repeats, help=Settings.repeats.__doc__)
    parser.add_argument("--nvrtc-runs", type=int, default=defaults.nvrtc_runs,
                        help=Settings.nvrtc_runs.__doc__)
    args = parser.parse_args()
    if args.count is not None and args.count < 1:
        parser.error(f"--count {args.count}: give at least 1")
    for flag, value in (("--repeats", args.repeats), ("--nvrtc-runs", args.nvrtc_runs)):
        if value < 1:
            parser.error(f"{flag} {value}: give at least 1")
    return Settings(baseline=args.baseline, count=args.count, race=args.race, repeats=args.repeats,
                    nvrtc_runs=args.nvrtc_runs)


# --------------------------------------------------------------------------------------------
# Headers and builds


@dataclass
class Header:
    """One emulation header, precompiled for one set of flags."""

    name: str
    path: Path
    flags: tuple[str, ...]
    lines: int
    build_s: float
    gch_bytes: int


def extract_baseline(commit: str, dest: Path) -> Path:
    """runtime/csrc of *commit*, written under *dest*."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "runtime/csrc"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {commit!r}: git archive failed: "
                         f"{archive.stderr.decode(errors='replace').strip()}")
    dest.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest / "runtime" / "csrc"


def precompile(name: str, csrc: Path, flags: tuple[str, ...], dest: Path) -> Header:
    """Copy *csrc*'s headers to *dest* and build the `.gch` beside them, as `toolchain.header_path`."""
    dest.mkdir(parents=True)
    for path in csrc.glob("*.h"):
        shutil.copyfile(path, dest / path.name)
    header = dest / EMULATION_HEADER
    start = time.perf_counter()
    proc = subprocess.run([compiler(), *flags, "-x", "c++-header", str(header), "-o", f"{header}.gch"],
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the {name} header does not precompile:\n{proc.stderr[-2000:]}")
    lines = sum(p.read_text().count("\n") for p in dest.glob("*.h"))
    return Header(name, header, flags, lines, seconds, Path(f"{header}.gch").stat().st_size)


def check_pch_used(header: Header, unit: str) -> None:
    """Stop unless g++ reads *header*'s `.gch` for *unit* (else the timings would parse the text)."""
    with private_dir("mg-header-cost-") as work:
        (work / "submission.cu.cpp").write_text(unit)
        proc = subprocess.run([compiler(), *header.flags, "-H", "-fsyntax-only", "-include", str(header.path),
                               "submission.cu.cpp"], cwd=work, capture_output=True, text=True, check=False)
    if f"! {header.path}.gch" not in proc.stderr:
        raise SystemExit(f"g++ does not use the {header.name} header's .gch ({header.path}.gch): "
                         f"{proc.stderr.strip()[:300]}")


def build_seconds(unit: str, header: Header, race: bool) -> float:
    """Wall seconds of the steps `toolchain.build_kernel` runs for *unit*; CompileError if one fails."""
    steps = kernel_build_steps(header.path, context_object(header.flags), header.flags, race)
    with private_dir("mg-header-cost-") as work:
        (work / "submission.cu.cpp").write_text(unit)
        start = time.perf_counter()
        for step in steps:
            proc = run_bounded(step, what="g++", limits=KERNEL_LIMITS, cwd=work)
            if proc.returncode != 0:
                log = proc.stderr.decode(errors="replace")
                raise CompileError(next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:200]))
        return time.perf_counter() - start


# --------------------------------------------------------------------------------------------
# The substrates, with each header


def substrates(count: int | None) -> list[tuple[str, str]]:
    """(problem, translation unit) of every substrate, or of *count* evenly spaced ones."""
    paths = sorted((REPO / "substrates").glob("*/substrate.cu"))
    if count is not None:
        paths = [paths[i * len(paths) // count] for i in range(min(count, len(paths)))]
    return [(p.parent.name, translation_unit(parse_submission(p.read_text()))) for p in paths]


def p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def compare(units: list[tuple[str, str]], pair: tuple[Header, Header], race: bool, repeats: int,
            console: Console) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Each header's seconds per unit that both build (the least of *repeats* interleaved rounds),
    and the reasons of the units skipped."""
    best: dict[str, dict[str, float]] = {h.name: {} for h in pair}
    skipped: dict[str, str] = {}
    for round_ in range(repeats):
        console.print(f"  round {round_ + 1}/{repeats} ...")
        for i, (problem, unit) in enumerate(units):
            if problem in skipped:
                continue
            order = pair if (i + round_) % 2 == 0 else pair[::-1]
            try:
                took = {h.name: build_seconds(unit, h, race) for h in order}
            except CompileError as err:
                skipped[problem] = str(err)
                continue
            for name, s in took.items():
                best[name][problem] = min(s, best[name].get(problem, s))
    built = [problem for problem, _ in units if problem not in skipped]
    return {name: [times[p] for p in built] for name, times in best.items()}, skipped


# --------------------------------------------------------------------------------------------
# Cooperative groups under NVRTC and the emulator


def _launch(code: str) -> str:
    return ('/* mutagym\n[[launch]]\nkernel = "row_sum"\ngrid = ["rows"]\nblock = [256]\n'
            f'args = ["x", "out", "cols"]\n*/\n{code}')


_INTRINSICS = """
extern "C" __global__ void row_sum(const float* x, float* out, int cols) {
    __shared__ float warp_sums[32];
    const float* row = x + (long)blockIdx.x * cols;
    float v = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += row[c];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) out[blockIdx.x] = v;
    }
}
"""

#: One row sum three ways: with intrinsics, the same with CUDA's header included but unused (what
#: reading the header costs), and with groups and `cg::reduce`.
REDUCTIONS = {
    "intrinsics": _launch(_INTRINSICS),
    "intrinsics, cooperative_groups.h included": _launch("#include <cooperative_groups.h>" + _INTRINSICS),
    "cooperative_groups.h + reduce.h": _launch("""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void row_sum(const float* x, float* out, int cols) {
    __shared__ float warp_sums[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const float* row = x + (long)blockIdx.x * cols;
    float v = 0.f;
    for (int c = block.thread_rank(); c < cols; c += block.size()) v += row[c];
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.f;
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) out[blockIdx.x] = v;
    }
}
"""),
}


def reduction_costs(runs: int, header: Header) -> dict[str, tuple[list[float], list[float]]]:
    """(NVRTC ms, g++ s with *header*) of each reduction, run by run in alternation."""
    nvrtc_ms: dict[str, list[float]] = {name: [] for name in REDUCTIONS}
    gxx_s: dict[str, list[float]] = {name: [] for name in REDUCTIONS}
    for source in REDUCTIONS.values():
        nvrtc_compile(f"{source}\n// warm-up\n")  # the helper's start and the headers' first read
    for run in range(runs):
        for name, source in REDUCTIONS.items():
            start = time.perf_counter()
            nvrtc_compile(f"{source}\n// bench {run} {time.time_ns()}\n")
            nvrtc_ms[name].append((time.perf_counter() - start) * 1e3)
            gxx_s[name].append(build_seconds(translation_unit(parse_submission(source)), header, race=False))
    return {name: (nvrtc_ms[name], gxx_s[name]) for name in REDUCTIONS}


# --------------------------------------------------------------------------------------------
# Main


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    settings = parse_settings()
    console = Console(width=150)
    started_load = load()
    with tempfile.TemporaryDirectory(prefix="mg-header-cost-") as tmp:
        os.environ["MUTAGYM_CACHE"] = str(Path(tmp) / "cache")  # cold: no cached probe or header
        root = Path(tmp)
        baseline_csrc = extract_baseline(settings.baseline, root / "baseline")
        modes = [False, True] if settings.race else [False]
        pchs: list[Header] = []
        results = {}
        units = substrates(settings.count)
        for race in modes:
            flags = kernel_flags() + (RACE_FLAGS if race else ())
            mode = "instrumented" if race else "plain"
            pair = (precompile(f"baseline {settings.baseline}", baseline_csrc, flags, root / mode / "baseline"),
                    precompile("current", CSRC, flags, root / mode / "current"))
            for header in pair:
                check_pch_used(header, units[0][1])
            pchs.extend(pair)
            console.print(f"{mode} builds of {len(units)} substrates ...")
            results[mode] = (pair, *compare(units, pair, race, settings.repeats, console))
        console.print("cooperative-groups reduction under NVRTC and g++ ...")
        reductions = reduction_costs(settings.nvrtc_runs, pchs[1])

    report(settings, console, started_load, len(units), pchs, results, reductions)


def report(settings: Settings, console: Console, started_load: str, n_units: int, pchs: list[Header],
           results: dict, reductions: dict[str, tuple[list[float], list[float]]]) -> None:
    gxx = subprocess.run([compiler(), "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "runtime/csrc"],
                           capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    table = Table(title="settings")
    table.add_column("setting")
    table.add_column("value")
    for row in (("baseline", f"{settings.baseline} runtime/csrc"),
                ("current", f"{head} runtime/csrc" + (" (with uncommitted changes)" if dirty else "")),
                ("substrates", f"{n_units}" + ("" if settings.count is None else f" (--count {settings.count})")),
                ("compiler", gxx), ("flags", " ".join(pchs[0].flags)),
                ("NVRTC", ".".join(map(str, nvrtc_version()))), ("rounds", f"{settings.repeats} (a kernel's least time)"),
                ("NVRTC runs", str(settings.nvrtc_runs)),
                ("load average", f"{started_load} at start, {load()} at end")):
        table.add_row(*row)
    console.print(table)

    table = Table(title="precompiled headers (one g++ run each)")
    for column in ("header", "build", "headers", ".gch MiB", "build s"):
        table.add_column(column, justify="left" if column in ("header", "build") else "right")
    for h in pchs:
        table.add_row(h.name, "instrumented" if RACE_FLAGS[0] in h.flags else "plain", f"{h.lines:,} lines",
                      f"{h.gch_bytes / 2**20:.1f}", f"{h.build_s:.2f}")
    console.print(table)

    table = Table(title=f"kernel build seconds per substrate (target: median current / baseline <= {TARGET_RATIO})")
    for column in ("build", "header", "kernels", "median s", "p90 s", "max s", "median ratio", "p90 ratio",
                   "paired ratio (median)"):
        table.add_column(column, justify="left" if column in ("build", "header") else "right")
    for mode, (pair, seconds, _) in results.items():
        base, cur = (seconds[h.name] for h in pair)
        if not base:
            table.add_row(mode, "-", "0", *["-"] * 6)
            continue
        paired = statistics.median(c / b for b, c in zip(base, cur))
        for h, values in zip(pair, (base, cur)):
            is_current = values is cur
            table.add_row(mode, h.name, str(len(values)), f"{statistics.median(values):.3f}", f"{p90(values):.3f}",
                          f"{max(values):.3f}",
                          f"{statistics.median(cur) / statistics.median(base):.2f}x" if is_current else "",
                          f"{p90(cur) / p90(base):.2f}x" if is_current else "",
                          f"{paired:.2f}x" if is_current else "")
    console.print(table)
    for mode, (_, _, skipped) in results.items():
        if skipped:
            for problem, reason in skipped.items():
                console.print(f"skipped ({mode}): {problem}: {reason}", highlight=False)
        else:
            console.print(f"skipped ({mode}): none, every substrate builds with both headers")

    table = Table(title="a block reduction, cold compile: with cooperative_groups.h against intrinsics")
    for column in ("written with", "NVRTC median ms", "NVRTC min ms", "NVRTC vs intrinsics",
                   "g++ median s (current)", "g++ vs intrinsics"):
        table.add_column(column, justify="left" if column == "written with" else "right")
    nv_base, gxx_base = (statistics.median(v) for v in reductions["intrinsics"])
    for name, (nv, gx) in reductions.items():
        table.add_row(name, f"{statistics.median(nv):.1f}", f"{min(nv):.1f}", f"{statistics.median(nv) / nv_base:.2f}x",
                      f"{statistics.median(gx):.3f}", f"{statistics.median(gx) / gxx_base:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
