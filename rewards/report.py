"""The harden report: `report.md` with the mutant counts from pool to witnessed, the checker
table, per-family escape, the hardened suites, and four PNG plots (matplotlib, Agg backend).

| plot | what |
| --- | --- |
| `heatmap.png` | per problem, mutants (rows, grouped by family) x valid inputs (columns): survived / killed / fault / not run |
| `escape_by_family.png` | escape rate (1 - detection) of the witnessed mutants by family, one bar per checker, each labelled escaped/witnessed |
| `blind_band.png` | largest undetectable relative error against reduction size |
| `time_by_stage.png` | wall time of each stage of `harden` |

Each plot is drawn by a `*_figure` function that returns the matplotlib figure, so what a plot
shows can be read back from its artists (the tests do); a legend names only what is drawn, and a
bar of height 0 still carries its label and a marker on the axis.

Blind band, as measured here (the paper's "largest undetectable relative error against
reduction size"): errors are taken relative to the output's scale, mean |reference|. The
*tolerance band* of a preset is `(atol + rtol mean|ref|) / mean|ref|` on its `uniform01` input:
the relative error the comparator hides there (softmax's outputs average 1/d, so the band grows
like d x atol and an all-zeros output passes once it exceeds 1). The *measured* band is the
largest `max_abs / mean|ref|` of a kill-matrix cell that survived the problem's tolerance: the
worst wrong output our mutants produced that still passed (a lower bound of the true band).
Elementwise problems, without a reduction, are plotted at reduction size 1.

The checker table has a `gate` row next to the presets' and the hardened checker's: the reward
gate (`envs.gate`) as far as the kill matrix covers it (`gate_score`), and the report lists per
shape class (presets and `rewards.shapes` classes) how many mutants its inputs witnessed.

A checker the kill matrix did not run every input of (`CheckerScore.measured` False) is shown as
`NOT_MEASURED` in every table and drawn as no bar (its legend entry says so), never as a rate:
the cells of its inputs that ran are only a lower bound, and with none run it would read as
detecting nothing. `harden` runs every scored checker's inputs, so its report has no such row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .judging import OK, WRONG, shared_cache
from .scoring import FAULT_OUTCOMES, POPULATIONS, CheckerScore, KillMatrix, cell_killed, summarize_shapes
from .suites import bootstrap_interval, detection_rate

__all__ = ["GATE_ROW", "HEATMAP_CELLS", "NOT_MEASURED", "blind_band", "blind_band_figure", "escape_figure", "gate_score",
           "population_rows",
           "heatmap_figure", "mutant_counts", "stage_time_figure", "write_report"]

#: The checker table's name for the reward gate's row.
GATE_ROW = "gate"
#: What a table shows for a checker whose inputs the kill matrix did not all run.
NOT_MEASURED = "not measured"
#: The heatmap's cell values: (value, what the cell says, colour).
HEATMAP_CELLS = ((-1, "not run", "#ffffff"), (0, "survived (every schedule)", "#bdbdbd"),
                 (1, "killed (wrong output)", "#2b8cbe"), (2, "fault (crash, race, timeout, ...)", "#e34a33"))


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return path


def heatmap_figure(km: KillMatrix, problems: list[str] | None = None, max_mutants: int = 120):
    """Per problem, mutants x valid inputs, cells as `HEATMAP_CELLS`; the legend names only the
    kinds of cell that occur, with their counts."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    plt = _plt()
    problems = problems or km.problems
    fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 6), squeeze=False)
    cmap = ListedColormap([colour for _, _, colour in HEATMAP_CELLS])
    seen: dict[int, int] = {}
    for ax, p in zip(axes[0], problems):
        muts = sorted((m for m in km.mutants if m["problem"] == p), key=lambda m: (m["family"], m["mutant_id"]))
        muts = muts[:max_mutants]
        ids = km.valid_inputs.get(p, [])
        col = {x: j for j, x in enumerate(ids)}
        M = np.full((len(muts), max(len(ids), 1)), -1)
        for i, m in enumerate(muts):
            for r in km.outcomes_of.get(m["mutant_id"], ()):
                j = col.get(r["input_id"])
                if j is None:
                    continue
                v = 2 if r["outcome"] in FAULT_OUTCOMES else (1 if r["outcome"] == WRONG else 0)
                M[i, j] = max(M[i, j], v)
        values, counts = np.unique(M[:, :len(ids)], return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist()):
            seen[v] = seen.get(v, 0) + c
        ax.imshow(M, aspect="auto", cmap=cmap, vmin=-1.5, vmax=2.5, interpolation="nearest")
        ax.set_title(f"{p}: {len(muts)} mutants x {len(ids)} valid inputs", fontsize=9)
        ax.set_xticks(range(len(ids)))
        ax.set_xticklabels([":".join(x.split(":")[1:3]) for x in ids], rotation=90, fontsize=5)
        fams = [m["family"] for m in muts]
        ticks = [i for i in range(len(fams)) if i == 0 or fams[i] != fams[i - 1]]
        ax.set_yticks(ticks)
        ax.set_yticklabels([fams[i] for i in ticks], fontsize=7)
    handles = [Patch(facecolor=colour, edgecolor="black", linewidth=0.5, label=f"{what}: {seen[v]} cells")
               for v, what, colour in HEATMAP_CELLS if v in seen]
    fig.suptitle("kill matrix: each cell is one mutant on one valid input")
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def escape_figure(scores: Mapping[str, Any]):
    """Grouped bars: escape rate per family, one bar per checker, each labelled `escaped/witnessed`;
    a 0 % bar keeps its label and gets a marker on the axis. A family a checker has no witnessed
    mutant of gets no bar; a checker that is not measured gets none at all, and a legend entry
    `<name>: not measured`."""
    from matplotlib.lines import Line2D
    plt = _plt()
    families = sorted({f for s in scores.values() for f, r in s.report.per_family.items() if r.total})
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(families) + 2), 4.8))
    width = 0.8 / max(len(scores), 1)
    unmeasured = []
    for k, (name, s) in enumerate(scores.items()):
        if not s.measured:
            unmeasured.append(Line2D([], [], linestyle="none", label=f"{name}: {NOT_MEASURED}"))
            continue
        rates = [(j, s.report.per_family[f]) for j, f in enumerate(families)
                 if f in s.report.per_family and s.report.per_family[f].total]
        if not rates:                    # nothing to draw: no legend entry either
            continue
        xs = [j + k * width - 0.4 + width / 2 for j, _ in rates]
        vals = [1 - r.rate for _, r in rates]
        bars = ax.bar(xs, vals, width, label=name, color=f"C{k % 10}")
        ax.bar_label(bars, labels=[f"{r.total - r.detected}/{r.total}" for _, r in rates],
                     rotation=90, fontsize=6, padding=2)
        zeros = [x for x, v in zip(xs, vals) if v == 0]
        if zeros:
            ax.plot(zeros, [0] * len(zeros), linestyle="none", marker="^", markersize=5,
                    color=f"C{k % 10}", clip_on=False)
    ax.set_xticks(range(len(families)))
    ax.set_xticklabels(families, rotation=20)
    ax.set_ylabel("escape rate (witnessed mutants accepted)")
    ax.set_ylim(0, 1.15)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    handles = ax.get_legend_handles_labels()[0] + unmeasured
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("escape by fault family (label: escaped/witnessed; a triangle marks 0)")
    fig.tight_layout()
    return fig


def _ref_scale(input_id: str) -> float:
    """mean |reference output| of one input (the output's scale), from the fp64 reference."""
    from ..substrates.catalog import load_problem
    from .moves import generate_from_id
    g = generate_from_id(input_id)
    p = load_problem(input_id.split(":")[0])
    refs = shared_cache().reference(p, g)
    vals = np.concatenate([np.abs(np.asarray(r, dtype=np.float64)).ravel() for r in refs.values()])
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else math.nan


def blind_band(km: KillMatrix, *, tolerance_presets: bool = True) -> list[dict[str, Any]]:
    """Rows of the blind band (see the module doc), one per problem and shape preset.

    `measured`: the largest `max_abs / mean|ref|` over the cells that survived the problem's
    tolerance (the worst wrong output that passed, relative to the output's scale), with its mutant
    and input; `tolerance_band`: `(atol + rtol mean|ref|) / mean|ref|` on the `uniform01` input of
    that preset, the relative error a tolerance hides at that scale (an all-zeros output passes
    when it exceeds 1). With `tolerance_presets`, the band is also computed for the problem's
    presets the matrix did not run (e.g. `large_reduction`), where `measured` is None.
    """
    from ..substrates.catalog import load_problem
    problem_of = km.problem_of
    best: dict[tuple[str, str], dict] = {}
    for r in km.outcomes:
        if r["outcome"] != OK or r["max_abs"] is None or not math.isfinite(r["max_abs"]):
            continue
        p, preset = problem_of.get(r["mutant_id"]), r["input_id"].split(":")[2]
        cur = best.setdefault((p, preset), {"max_abs": -1.0})
        if r["max_abs"] > cur["max_abs"]:
            best[(p, preset)] = {"max_abs": r["max_abs"], "mutant": r["mutant_id"], "input": r["input_id"]}
    rows = []
    for p in sorted({m["problem"] for m in km.mutants}):
        prob = load_problem(p)
        red = prob.spec.reduction_dim
        t = prob.spec.tolerance
        presets = prob.preset_names if tolerance_presets else sorted({k[1] for k in best if k[0] == p})
        for preset in presets:
            if preset == "tiny" and (p, preset) not in best:
                continue
            hit = best.get((p, preset))
            scale = _ref_scale(f"{p}:uniform01:{preset}:0")
            row = {"problem": p, "preset": preset,
                   "reduction": int(prob.preset(preset)[red]) if red else 1,
                   "tolerance_band": (t.atol + t.rtol * scale) / scale if scale > 0 else math.inf,
                   "measured": None, "mutant": "", "input": ""}
            if hit is not None:
                own = _ref_scale(hit["input"])
                row.update(measured=hit["max_abs"] / own if own > 0 else math.inf,
                           mutant=hit["mutant"], input=hit["input"])
            rows.append(row)
    return rows


def blind_band_figure(rows: list[dict[str, Any]]):
    """Per problem: the tolerance band (a line across reduction sizes, a dash where the problem has
    one size) and the measured survivors (dots), log-log; the dotted line at 1 is where an
    all-zeros output passes."""
    plt = _plt()
    problems = sorted({r["problem"] for r in rows})
    fig, ax = plt.subplots(figsize=(7.5 + 2.2 * math.ceil(len(problems) / 16), 4.5))
    for k, p in enumerate(problems):
        color = f"C{k % 10}"
        pts = sorted((r["reduction"], r["tolerance_band"]) for r in rows if r["problem"] == p
                     and math.isfinite(r["tolerance_band"]) and r["tolerance_band"] > 0)
        if len({a for a, _ in pts}) > 1:
            ax.plot([a for a, _ in pts], [b for _, b in pts], "-", color=color, alpha=0.7,
                    label=f"{p}: tolerance band (U[0,1))")
        elif pts:
            ax.plot([a for a, _ in pts], [b for _, b in pts], linestyle="none", marker="_", markersize=14,
                    markeredgewidth=2, color=color, label=f"{p}: tolerance band (U[0,1))")
        meas = sorted((r["reduction"], r["measured"]) for r in rows if r["problem"] == p
                      and r["measured"] is not None and math.isfinite(r["measured"]) and r["measured"] > 0)
        if meas:
            ax.plot([a for a, _ in meas], [b for _, b in meas], linestyle="none", marker="o", color=color,
                    label=f"{p}: surviving mutants")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="1: an all-zeros output passes above")
    ax.set_xlabel("reduction size (elements reduced per output; 1 = elementwise)")
    ax.set_ylabel("undetected error / mean |reference|")
    ax.set_title("blind band at the problem tolerance")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1), ncol=math.ceil(len(problems) / 16) or 1)
    fig.tight_layout()
    return fig


def stage_time_figure(stage_seconds: Mapping[str, float]):
    """One horizontal bar per stage of `harden`, in run order, labelled with its seconds."""
    plt = _plt()
    names = list(stage_seconds)
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(names) + 1.2))
    bars = ax.barh(range(len(names)), [stage_seconds[n] for n in names], color="C0")
    ax.bar_label(bars, labels=[f"{stage_seconds[n]:.1f} s" for n in names], padding=3, fontsize=8)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("wall time (s)")
    ax.set_xlim(0, max([*stage_seconds.values(), 1.0]) * 1.25)
    ax.set_title(f"time by stage ({sum(stage_seconds.values()):.0f} s in all)")
    fig.tight_layout()
    return fig


def gate_score(hardened: CheckerScore, km: KillMatrix, problems: list[str], *, n_boot: int = 2000,
               seed: int = 0) -> CheckerScore:
    """The reward gate's detection of the witnessed mutants of `km`, from the stages the matrix
    covers: the hardened suite (`hardened`, its score with its own tolerances), then the pool of
    record, every valid input of the matrix at the problem's tolerance in the matrix's schedules
    (a mutant counts as killed by the pool when one of its cells on a valid input rejects it in the
    matrix's own verdict, `cell_killed` on `outcome`). A witness is such a cell, so the pool alone
    detects every witnessed mutant; the figure leaves out what the matrix does not hold (the
    gate's third thread order, the pool's coverage inputs beyond the matrix, the fresh draws).
    False rejects are the hardened suite's (the pool's inputs passed the validity gate)."""
    valid = {p: set(km.valid_inputs.get(p, [])) for p in problems}
    problem_of = km.problem_of
    pool_killed = {m for m, rows in km.outcomes_of.items() if problem_of.get(m) in valid
                   and any(r["input_id"] in valid[problem_of[m]] and cell_killed(r, "outcome", math.nan)
                           for r in rows)}
    witnessed = km.witnessed(problems)
    killed = (set(hardened.killed) | pool_killed) & set(witnessed)
    report = detection_rate(killed, witnessed, family_of=km.family_of, problem_of=problem_of)
    interval = (bootstrap_interval(killed, witnessed, problem_of, n_boot=n_boot, seed=seed) if witnessed
                else (math.nan, math.nan, math.nan))
    used = {p: sorted(valid[p] | set(hardened.inputs_used.get(p, []))) for p in problems}
    return CheckerScore(GATE_ROW, GATE_ROW, killed, witnessed, report, interval, used, {}, hardened.exact,
                        hardened.false_rejects, hardened.kernels_checked)


def shape_rows(km: KillMatrix) -> list[dict[str, Any]]:
    """Per shape class of the matrix's inputs (fixed presets, then `rewards.shapes` classes): valid
    inputs, mutants witnessed and mutants witnessed only there (`scoring.summarize_shapes`)."""
    return summarize_shapes(km.inputs, [m["witnesses"] for m in km.mutants])


def _pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _gate_row(gate: CheckerScore, summary: Any) -> dict[str, Any]:
    """The checker table's row of `gate_score` (the fields of `HardenSummary.rows`)."""
    pool = set(gate.witnessed)
    counts = [len(v) for v in gate.inputs_used.values()]
    return {"checker": GATE_ROW, "detection": gate.detection, "low": gate.interval[1], "high": gate.interval[2],
            "detected": gate.report.overall.detected, "witnessed": gate.report.overall.total,
            "selection": gate.rate_on(m for m in summary.result.selection if m in pool),
            "heldout": gate.rate_on(m for m in summary.result.heldout if m in pool),
            "false_rejects": None if gate.false_rejects is None else len(gate.false_rejects),
            "kernels_checked": gate.kernels_checked,
            "median_inputs": float(np.median(counts)) if counts else math.nan, "missing_inputs": 0,
            "measured": True}


def _population_section(rows: list[dict[str, Any]], summary: Any) -> list[str]:
    """The report's lines on the two fault populations (`population_rows`)."""
    faults = summary.field_faults
    lines = ["", "## Fault populations", "",
             f"Mutants of the rules and field faults, the wrong kernels of the field-fault sets "
             f"({', '.join(f'`{s}`' for s in faults.sets)}: {len(faults.wrong)} wrong and {len(faults.correct)} "
             "correct kernels of these problems), each in the kill matrix with its witness among the "
             "candidate inputs. The checker table above counts both; here each population has its own "
             "detection and its own held-out half. A field false accept is a wrong field kernel the "
             "checker accepts on every input of the matrix it runs (one no valid input witnesses "
             "counts); a field false reject is a correct field kernel it rejects (real runs; the gate's "
             "row: the hardened suite, then every valid input of the matrix at the problem's tolerance "
             "in the matrix's thread orders).", "",
             "| checker | population | detection | selection | held-out | false accepts | false rejects |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        rate = r["detected"] / r["witnessed"] if r["witnessed"] else math.nan
        fa = f"{r['false_accepts']}/{r['faults']}" if "false_accepts" in r else "-"
        fr = ("-" if r.get("false_rejects") is None else f"{r['false_rejects']}/{r['correct']}")
        detection = [f"{_pct(rate)} ({r['detected']}/{r['witnessed']})", _pct(r["selection"]), _pct(r["heldout"]),
                     fa] if r["measured"] else [NOT_MEASURED] * 3 + [NOT_MEASURED if "false_accepts" in r else "-"]
        lines.append(f"| {r['checker']} | {r['population']} | " + " | ".join(detection) + f" | {fr} |")
    rejected = [(n, f) for n, fs in (summary.field_rejects or {}).items() for f in fs]
    if rejected:
        lines += ["", "Field false rejects:", "", "| checker | problem | kernel | verdict |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {n} | {f.problem} | {f.kernel} | {f.message[:200].replace('|', chr(92) + '|')} |"
                  for n, f in rejected]
    return lines


#: Where `harden` keeps the mutant pool table (`mutants.pool`), under its output folder.
POOL_TABLE = Path("pool") / "mutants.parquet"

#: The steps from the rules to a detection rate's denominator: (count key, what it means).
MUTANT_STEPS = (
    ("generated", "a substrate with one rule applied at one site (identical sources counted once)"),
    ("uncompilable", "NVRTC or the CPU emulator refuses to build it: no policy could submit it"),
    ("quarantined", "it builds, but crashes, faults, hangs, raises a sync error or cannot launch on the "
                    "official inputs (`uniform01`, official shape, seed 0, ascending order): every checker "
                    "rejects it, so it measures none and is left out"),
    ("kill matrix", "the rest: run on every valid input (one every correct kernel passes) in every "
                    "thread order of the matrix"),
    ("witnessed", "some valid input kills it (a wrong output or a fault): only witnessed mutants enter "
                  "a detection rate"),
    ("not witnessed", "no valid input kills it: an equivalent mutant, or a fault none of the inputs "
                      "reaches; in no denominator"),
)


def mutant_counts(km: KillMatrix, problems: list[str], pool_table: Path | None = None) -> dict[str, int | None]:
    """The mutants of `problems` at each of `MUTANT_STEPS`: the first three from the pool table
    (None without one), the rest from the kill matrix."""
    counts: dict[str, int | None] = dict.fromkeys(("generated", "uncompilable", "quarantined"))
    if pool_table is not None and pool_table.is_file():
        import pyarrow.parquet as pq
        keep = set(problems)
        statuses = [r["status"] for r in pq.read_table(pool_table, columns=["problem", "status"]).to_pylist()
                    if r["problem"] in keep]
        counts.update(generated=len(statuses), uncompilable=statuses.count("uncompilable"),
                      quarantined=statuses.count("quarantined"))
    population = km.population_of
    ran = sum(m["problem"] in problems and population[m["mutant_id"]] == "mutant" for m in km.mutants)
    witnessed = sum(population[m] == "mutant" for m in km.witnessed(problems))
    counts.update({"kill matrix": ran, "witnessed": witnessed, "not witnessed": ran - witnessed})
    return counts


#: The outcomes of the emulator's own checks (docs/emulator.md): a race, state carried across
#: launches, a spin or barrier misuse, and the memory wall; then the ends of runs that do not finish.
CHECK_OUTCOMES = ("data_race", "stateful_kernel", "sync_error", "memory_fault", "timeout", "crash")


def check_rows(km: KillMatrix, problems: list[str], scored: Mapping[str, CheckerScore],
               pool_table: Path | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What the emulator's checks catch, per outcome and per rule: mutants quarantined with the
    outcome on the official inputs (from the pool table; None without one) and mutants of the
    matrix with a cell ending so, with those that no cell of the matrix shows as a wrong output
    (a plain emulator would have passed them or shown nothing); per rule also the witnessed ones
    each checker of `scored` detects. A rule is listed when one of its mutants is caught either way."""
    keep = set(problems)
    quarantined: dict[str, str] = {}       # mutant -> outcome it was quarantined with
    rule_of: dict[str, str] = {m["mutant_id"]: m.get("rule") or "?" for m in km.mutants}
    import pyarrow.parquet as pq
    columns = ["id", "problem", "rule", "status", "error"]
    known = (pool_table is not None and pool_table.is_file()
             and set(columns) <= set(pq.read_schema(pool_table).names))
    if known:
        for r in pq.read_table(pool_table, columns=columns).to_pylist():
            outcome = (r["error"] or "").split(" ", 1)[0]
            if r["problem"] in keep and r["status"] == "quarantined" and outcome in CHECK_OUTCOMES:
                quarantined[r["id"]] = outcome
                rule_of[r["id"]] = r["rule"] or "?"
    caught: dict[str, set[str]] = {}       # matrix mutant -> check outcomes of its cells
    wrong: set[str] = set()
    population = km.population_of
    for m, rows in km.outcomes_of.items():
        if km.problem_of.get(m) not in keep or population.get(m) != "mutant":
            continue
        outcomes = {r["outcome"] for r in rows}
        if outcomes & set(CHECK_OUTCOMES):
            caught[m] = outcomes & set(CHECK_OUTCOMES)
        if "wrong" in outcomes:
            wrong.add(m)
    by_outcome = [{"outcome": o, "quarantined": sum(q == o for q in quarantined.values()) if known else None,
                   "matrix": sum(o in c for c in caught.values()),
                   "only": sum(o in c for m, c in caught.items() if m not in wrong)} for o in CHECK_OUTCOMES]
    witnessed = set(km.witnessed(problems))
    rules = sorted({rule_of[m] for m in (*quarantined, *caught)})
    by_rule = []
    for rule in rules:
        in_matrix = [m for m, r in rule_of.items() if r == rule and m in km.problem_of
                     and km.problem_of[m] in keep and population.get(m) == "mutant"]
        seen = [m for m in in_matrix if m in witnessed]
        row = {"rule": rule, "quarantined": sum(rule_of[m] == rule for m in quarantined) if known else None,
               "matrix": len(in_matrix), "witnessed": len(seen),
               "caught": sum(m in caught for m in in_matrix),
               "only": sum(m in caught and m not in wrong for m in in_matrix),
               "detected": {name: sum(m in s.killed for m in seen) if s.measured else None
                            for name, s in scored.items()}}
        by_rule.append(row)
    by_rule.sort(key=lambda r: (-((r["quarantined"] or 0) + r["caught"]), r["rule"]))
    return by_outcome, by_rule


def _count(value: int | None) -> str:
    """A count of the checks section; None (no pool table to count from) as '-'."""
    return "-" if value is None else str(value)


def _checks_section(by_outcome: list[dict[str, Any]], by_rule: list[dict[str, Any]], names: list[str],
                    most: int = 30) -> list[str]:
    """The report's lines on what the emulator's checks catch (`check_rows`), the `most` rules
    they catch most of."""
    lines = ["", "## What the emulator's checks catch", "",
             "The race, state and spin checks, the memory wall and the time limit end a run with an "
             "outcome of their own (docs/emulator.md). Quarantined: mutants that ended so on the "
             "official inputs when the pool was built (a checker catches them on any input set that "
             "holds the official shape). Matrix: mutants of the kill matrix with some cell ending so; "
             "only: of those, the ones no cell shows as a wrong output.", "",
             "| outcome | quarantined | matrix | only |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r['outcome']} | {_count(r['quarantined'])} | {r['matrix']} | {r['only']} |" for r in by_outcome]
    if by_rule:
        lines += ["", f"Per rule ({min(most, len(by_rule))} of {len(by_rule)} rules with a mutant caught so, "
                      "most caught first; the checkers' columns are detected/witnessed mutants of the matrix):", "",
                  "| " + " | ".join(["rule", "quarantined", "matrix", "witnessed", "caught", "only", *names]) + " |",
                  "| --- " + "| ---: " * (5 + len(names)) + "|"]
        for r in by_rule[:most]:
            cells = [r["rule"], *(_count(r[k]) for k in ("quarantined", "matrix", "witnessed", "caught", "only")),
                     *(f"{r['detected'][n]}/{r['witnessed']}" if r["detected"][n] is not None else NOT_MEASURED
                       for n in names)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def population_rows(scored: Mapping[str, CheckerScore], km: KillMatrix, summary: Any) -> list[dict[str, Any]]:
    """Per checker (the gate too) and fault population (`scoring.POPULATIONS`) of `summary.problems`:
    witnessed and detected faults, detection on the selection and held-out halves (each population
    is split 50/50 on its own: the hash split goes by id). Field rows add the false accepts, field
    wrong kernels the checker accepts on every input of the matrix it has (not witnessed ones
    included), and the false rejects of the field sets' correct kernels
    (`summary.field_rejects`, None when not measured)."""
    population, keep = km.population_of, set(summary.problems)
    faults = {pop: [m["mutant_id"] for m in km.mutants
                    if m["problem"] in keep and population[m["mutant_id"]] == pop] for pop in POPULATIONS}
    selection, heldout = set(summary.result.selection), set(summary.result.heldout)
    correct = len(summary.field_faults.correct) if summary.field_faults is not None else 0
    rows = []
    for name, s in scored.items():
        pool = set(s.witnessed)
        for pop in POPULATIONS:
            witnessed = [m for m in faults[pop] if m in pool]
            row = {"checker": name, "population": pop, "measured": s.measured,
                   "faults": len(faults[pop]), "witnessed": len(witnessed),
                   "detected": sum(m in s.killed for m in witnessed),
                   "selection": s.rate_on(m for m in witnessed if m in selection),
                   "heldout": s.rate_on(m for m in witnessed if m in heldout)}
            if pop == "field":
                rejects = (summary.field_rejects or {}).get(name)
                row.update(false_accepts=sum(m not in s.killed for m in faults[pop]),
                           false_rejects=None if rejects is None else len(rejects), correct=correct)
            rows.append(row)
    return rows


def write_report(summary: Any, km: KillMatrix) -> Path:
    """Write `<summary.out>/report.md` and its PNGs; returns the report's path."""
    out = Path(summary.out)
    out.mkdir(parents=True, exist_ok=True)
    res = summary.result
    hardened = summary.scores.get(res.checker.name)
    gate = gate_score(hardened, km, summary.problems) if hardened is not None else None
    scored = {**summary.scores, **({GATE_ROW: gate} if gate is not None else {})}
    _save(heatmap_figure(km, summary.problems), out / "heatmap.png")
    _save(escape_figure(scored), out / "escape_by_family.png")
    band = blind_band(km)
    _save(blind_band_figure(band), out / "blind_band.png")
    _save(stage_time_figure(summary.stage_seconds), out / "time_by_stage.png")
    counts = mutant_counts(km, summary.problems, out / POOL_TABLE)
    lines = [
        "# mutagym harden report", "",
        f"Problems: {', '.join(summary.problems)}. Kill matrix: `{summary.killmatrix}` "
        f"(hash {res.checker.provenance['killmatrix_hash'][:12]}), {len(km.mutants)} mutants, "
        f"{len(km.outcomes)} cells. Hardened checker: `{summary.checker_path}` "
        f"(`{res.checker.version_id}`), budget {res.checker.provenance['budget']} inputs per problem.", "",
        "## Mutants", "",
        "From the rules to the denominator of every detection rate below"
        + ("" if counts["generated"] is not None else
           f" (no pool table at `{POOL_TABLE}`: the first three steps are not known here)") + ":", "",
        "| step | mutants | what it means |", "| --- | ---: | --- |",
        *(f"| {step} | {'-' if counts[step] is None else counts[step]} | {meaning} |" for step, meaning in MUTANT_STEPS),
        "",
        "## Time by stage", "",
        "![time by stage](time_by_stage.png)", "",
        "| stage | seconds |", "| --- | ---: |",
        *(f"| {stage} | {seconds:.1f} |" for stage, seconds in summary.stage_seconds.items()),
        "",
        "## Checkers", "",
        "Detection of the witnessed mutants (95 % bootstrap over problems), on the selection and "
        "held-out halves of the 50 % hash split, false rejects of correct kernels, and inputs per "
        "problem found in the kill matrix (missing: suite inputs the matrix did not run; a checker "
        f"with a missing input is {NOT_MEASURED}, not scored on part of its inputs).", "",
        "| checker | detection | 95 % CI | selection | held-out | false rejects | inputs/problem (median) | missing inputs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in summary.rows() + ([_gate_row(gate, summary)] if gate is not None else []):
        fr = "-" if r["false_rejects"] is None else f"{r['false_rejects']}/{r['kernels_checked']}"
        detection = ([f"{_pct(r['detection'])} ({r['detected']}/{r['witnessed']})",
                      f"{_pct(r['low'])} - {_pct(r['high'])}", _pct(r["selection"]), _pct(r["heldout"])]
                     if r["measured"] else [NOT_MEASURED] * 4)
        lines.append(f"| {r['checker']} | " + " | ".join(detection) +
                     f" | {fr} | {r['median_inputs']:g} | {r['missing_inputs']} |")
    if gate is not None:
        schedules = ", ".join(km.manifest.get("settings", {}).get("schedules") or ["ascending", "descending"])
        lines += ["", f"`{GATE_ROW}` is the reward gate (`envs.gate`, what every reward is paid by) as far as "
                      f"this kill matrix covers it: the hardened suite, then the pool of record, every valid "
                      f"input of the matrix at the problem's tolerance in its schedules ({schedules}). A "
                      "witness is a valid input that kills the mutant, so the pool detects every witnessed "
                      "mutant by definition (the row is computed from the cells, not assumed). Its false rejects are the "
                      "hardened suite's (the pool's inputs passed the validity gate). Not part of this "
                      "figure: the gate's third thread order (`shuffled:1`), the pool's coverage inputs "
                      "beyond the matrix and the fresh stage drawn at every evaluation, nor mutants no "
                      "input of the matrix witnessed. The live figure, every stage judged by the real "
                      "gate, is `benchmarks/bench_gate_detection.py` (benchmarks/README.md, \"Gate "
                      "detection\")."]
    if getattr(summary, "field_faults", None) is not None:
        lines += _population_section(population_rows(scored, km, summary), summary)
    lines += _checks_section(*check_rows(km, summary.problems, scored, out / POOL_TABLE), list(scored))
    rejected = [(n, f) for n, s in summary.scores.items() for f in (s.false_rejects or [])]
    if rejected:
        lines += ["", "False rejects (a correct kernel the checker rejects; `fuzz` is the control that "
                      "shows them):", "", "| checker | problem | kernel | verdict |", "| --- | --- | --- | --- |"]
        lines += [f"| {n} | {f.problem} | {f.kernel} | {f.message[:200].replace('|', chr(92) + '|')} |"
                  for n, f in rejected]
    lines += ["", "## Escape by family", "", "![escape by family](escape_by_family.png)", "",
              "Per family, the witnessed mutants a checker accepts: escaped/witnessed (the escape "
              "rate); a family with few witnessed mutants makes a coarse rate.", ""]
    families = sorted({f for s in scored.values() for f in s.report.per_family})
    lines.append("| checker | " + " | ".join(families) + " |")
    lines.append("| --- " * (len(families) + 1) + "|")
    for name, s in scored.items():
        cells = [(NOT_MEASURED if not s.measured else f"{r.total - r.detected}/{r.total} ({_pct(1 - r.rate)})"
                  if (r := s.report.per_family.get(f)) is not None and r.total else "-") for f in families]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Hardened suites", "",
              "| problem | suite | method | witnessed | selection | held-out | tolerance (default) | legit need | note |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p, ph in res.problems.items():
        tol = "default" if ph.tol is None else f"{ph.tol:g}"
        need = "-" if math.isnan(ph.legit_need) else f"{ph.legit_need:.2g}"
        lines.append(f"| {p} | {', '.join(f'`{x}`' for x in ph.suite)} | {ph.method}{' (optimal)' if ph.optimal else ''} | "
                     f"{ph.witnessed} | {_pct(ph.selection_rate)} | {_pct(ph.heldout_rate)} | "
                     f"{tol} ({ph.default_tol[0]:g}/{ph.default_tol[1]:g}) | {need} | {ph.note} |")
    default = res.checker.provenance.get("default_suite", {}).get("per_family", {})
    lines += ["", "Default suite (problems outside the matrix, e.g. a user's own task; "
                  "`rewards.harden.taxonomy_suite`): "
                  + ", ".join(f"`{r.generator}:{r.preset}`" for r in res.checker.inputs)
                  + ". The first is the generator x shape that kills most witnessed mutants; then, per "
                    "fault family, the one that kills most of what is left: "
                  + ", ".join(f"{f} {c}" for f, c in default.items()) + "."]
    if summary.restored_default:
        lines += ["", f"Default tolerance restored (a tightened one rejected a correct kernel): "
                      f"{', '.join(summary.restored_default)}."]
    shapes = shape_rows(km)
    lines += ["", "## Shape classes", "",
              "Per shape of the kill matrix's inputs, fixed presets first, then the shape classes of "
              "`rewards.shapes` (drawn as presets `@<class>`; the kill matrix runs the cheap ones, one "
              "instance each): problems and valid inputs of that shape, witnessed mutants some valid "
              "input of that shape kills, and those no other shape kills.", "",
              "| shape class | kind | problems | valid inputs | mutants witnessed | witnessed only here |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['shape_class']} | {r['kind']} | {r['problems']} | {r['valid_inputs']} | {r['witnessed']} | "
              f"{r['only']} |" for r in shapes]
    lines += ["", "## Blind band", "", "![blind band](blind_band.png)", "",
              "Error relative to the output's scale (mean |reference|) that the problem's tolerance "
              "cannot see: the tolerance band on U[0, 1) inputs per shape preset (an all-zeros output "
              "passes where it exceeds 1), and the largest error of a surviving mutant output in the "
              "kill matrix (a lower bound of the true band: only the errors our mutants made).", "",
              "| problem | preset | reduction | tolerance band | largest surviving error | mutant | input |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for b in band:
        meas = "-" if b["measured"] is None else f"{b['measured']:.3g}"
        lines.append(f"| {b['problem']} | {b['preset']} | {b['reduction']} | {b['tolerance_band']:.3g} | "
                     f"{meas} | {'`' + b['mutant'] + '`' if b['mutant'] else '-'} | "
                     f"{'`' + b['input'] + '`' if b['input'] else '-'} |")
    lines += ["", "## Kill matrix", "", "![kill matrix heatmap](heatmap.png)", "",
              "Escaped mutants per checker (witnessed, accepted):", ""]
    for name, s in scored.items():
        esc = s.escaped
        if not s.measured:
            lines.append(f"- {name}: {NOT_MEASURED}")
            continue
        lines.append(f"- {name}: {len(esc)}" + (f" (e.g. {', '.join(f'`{m}`' for m in esc[:5])})" if esc else ""))
    missing = {n: s.missing_inputs for n, s in summary.scores.items() if s.missing_inputs}
    if missing:
        lines += ["", f"Suite inputs not in the kill matrix (so the checker is {NOT_MEASURED}: run the kill "
                      "matrix with its generators, presets and seeds, as `mutagym harden` does, to score it):", ""]
        for n, miss in missing.items():
            lines.append(f"- {n}: " + ", ".join(f"{p}: {len(v)}" for p, v in miss.items()))
    invalid = {n: s.invalid_inputs for n, s in summary.scores.items() if s.invalid_inputs}
    if invalid:
        lines += ["", "Suite inputs the validity gate refused (a correct kernel fails them at the problem "
                      "tolerance, so they never ran on mutants):", ""]
        for n, bad in invalid.items():
            lines.append(f"- {n}: " + ", ".join(f"{p}: {len(v)}" for p, v in bad.items()))
    lines.append("")
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
