"""The harden report: `report.md` with the checker table, per-family escape, the hardened suites,
and three PNG plots (matplotlib, Agg backend).

| plot | what |
| --- | --- |
| `heatmap.png` | per problem, mutants (rows, grouped by family) x valid inputs (columns): survived / killed / fault |
| `escape_by_family.png` | escape rate (1 - detection) of the witnessed mutants by family, one bar per checker |
| `blind_band.png` | largest undetectable relative error against reduction size |

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .judging import OK, WRONG, shared_cache
from .scoring import FAULT_OUTCOMES, CheckerScore, KillMatrix, cell_killed, summarize_shapes
from .suites import bootstrap_interval, detection_rate

__all__ = ["GATE_ROW", "blind_band", "gate_score", "plot_blind_band", "plot_escape_by_family", "plot_heatmap",
           "write_report"]

#: The checker table's name for the reward gate's row.
GATE_ROW = "gate"


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_heatmap(km: KillMatrix, path: Path, problems: list[str] | None = None,
                 max_mutants: int = 120) -> Path:
    """Per problem, mutants x valid inputs: 0 survived (every schedule), 1 killed, 2 fault."""
    from matplotlib.colors import ListedColormap
    plt = _plt()
    problems = problems or km.problems
    fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 6), squeeze=False)
    cmap = ListedColormap(["#d9d9d9", "#2b8cbe", "#e34a33"])
    for ax, p in zip(axes[0], problems):
        muts = sorted((m for m in km.mutants if m["problem"] == p), key=lambda m: (m["family"], m["mutant_id"]))
        muts = muts[:max_mutants]
        ids = km.valid_inputs.get(p, [])
        col = {x: j for j, x in enumerate(ids)}
        M = np.zeros((len(muts), max(len(ids), 1)))
        for i, m in enumerate(muts):
            for r in km.outcomes_of.get(m["mutant_id"], ()):
                j = col.get(r["input_id"])
                if j is None:
                    continue
                v = 2 if r["outcome"] in FAULT_OUTCOMES else (1 if r["outcome"] == WRONG else 0)
                M[i, j] = max(M[i, j], v)
        ax.imshow(M, aspect="auto", cmap=cmap, vmin=0, vmax=2, interpolation="nearest")
        ax.set_title(f"{p}: {len(muts)} mutants x {len(ids)} inputs")
        ax.set_xticks(range(len(ids)))
        ax.set_xticklabels([":".join(x.split(":")[1:3]) for x in ids], rotation=90, fontsize=5)
        fams = [m["family"] for m in muts]
        ticks = [i for i in range(len(fams)) if i == 0 or fams[i] != fams[i - 1]]
        ax.set_yticks(ticks)
        ax.set_yticklabels([fams[i] for i in ticks], fontsize=7)
    fig.suptitle("kill matrix (grey survived, blue killed, red fault)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_escape_by_family(scores: Mapping[str, Any], path: Path) -> Path:
    """Grouped bars: escape rate per family, one bar per checker."""
    plt = _plt()
    families = sorted({f for s in scores.values() for f in s.report.per_family})
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(families) + 2), 4))
    width = 0.8 / max(len(scores), 1)
    x = np.arange(len(families))
    for k, (name, s) in enumerate(scores.items()):
        vals = [1 - s.report.per_family[f].rate if f in s.report.per_family else 0.0 for f in families]
        ax.bar(x + k * width - 0.4 + width / 2, vals, width, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels(families, rotation=20)
    ax.set_ylabel("escape rate (witnessed mutants accepted)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    ax.set_title("escape by fault family")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ref_scale(input_id: str) -> float:
    """mean |reference output| of one input (the output's scale), from the fp64 reference."""
    from ..substrates.catalog import load_problem
    from .generators import generate_from_id
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


def plot_blind_band(rows: list[dict[str, Any]], path: Path) -> Path:
    """Per problem: the tolerance band (line) and the measured survivors (markers), log-log."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for k, p in enumerate(sorted({r["problem"] for r in rows})):
        color = f"C{k % 10}"
        pts = sorted((r["reduction"], r["tolerance_band"]) for r in rows if r["problem"] == p
                     and math.isfinite(r["tolerance_band"]))
        ax.plot([a for a, _ in pts], [b for _, b in pts], "-", color=color, alpha=0.6,
                label=f"{p}: tolerance band (U[0,1))")
        meas = sorted((r["reduction"], r["measured"]) for r in rows if r["problem"] == p
                      and r["measured"] is not None and math.isfinite(r["measured"]) and r["measured"] > 0)
        if meas:
            ax.plot([a for a, _ in meas], [b for _, b in meas], "o", color=color,
                    label=f"{p}: surviving mutants")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("reduction size (elements reduced per output; 1 = elementwise)")
    ax.set_ylabel("undetected error / mean |reference|")
    ax.set_title("blind band at the problem tolerance")
    if rows:
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
            "median_inputs": float(np.median(counts)) if counts else math.nan, "missing_inputs": 0}


def write_report(summary: Any, km: KillMatrix) -> Path:
    """Write `<summary.out>/report.md` and its PNGs; returns the report's path."""
    out = Path(summary.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_heatmap(km, out / "heatmap.png", summary.problems)
    plot_escape_by_family(summary.scores, out / "escape_by_family.png")
    band = blind_band(km)
    plot_blind_band(band, out / "blind_band.png")
    res = summary.result
    lines = [
        "# mutagym harden report", "",
        f"Problems: {', '.join(summary.problems)}. Kill matrix: `{summary.killmatrix}` "
        f"(hash {res.checker.provenance['killmatrix_hash'][:12]}), {len(km.mutants)} mutants, "
        f"{len(km.outcomes)} cells. Hardened checker: `{summary.checker_path}` "
        f"(`{res.checker.version_id}`), budget {res.checker.provenance['budget']} inputs per problem.", "",
        "Time by stage (s): " + ", ".join(f"{k} {v:.1f}" for k, v in summary.stage_seconds.items()) + ".", "",
        "## Checkers", "",
        "Detection of the witnessed mutants (95 % bootstrap over problems), on the selection and "
        "held-out halves of the 50 % hash split, false rejects of correct kernels, and inputs per "
        "problem found in the kill matrix (missing: suite inputs the matrix did not run).", "",
        "| checker | detection | 95 % CI | selection | held-out | false rejects | inputs/problem (median) | missing inputs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    hardened = summary.scores.get(res.checker.name)
    gate = gate_score(hardened, km, summary.problems) if hardened is not None else None
    for r in summary.rows() + ([_gate_row(gate, summary)] if gate is not None else []):
        fr = "-" if r["false_rejects"] is None else f"{r['false_rejects']}/{r['kernels_checked']}"
        lines.append(f"| {r['checker']} | {_pct(r['detection'])} ({r['detected']}/{r['witnessed']}) | "
                     f"{_pct(r['low'])} - {_pct(r['high'])} | {_pct(r['selection'])} | {_pct(r['heldout'])} | "
                     f"{fr} | {r['median_inputs']:g} | {r['missing_inputs']} |")
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
    rejected = [(n, f) for n, s in summary.scores.items() for f in (s.false_rejects or [])]
    if rejected:
        lines += ["", "False rejects (a correct kernel the checker rejects; `fuzz` is the control that "
                      "shows them):", "", "| checker | problem | kernel | verdict |", "| --- | --- | --- | --- |"]
        lines += [f"| {n} | {f.problem} | {f.kernel} | {f.message[:200].replace('|', chr(92) + '|')} |"
                  for n, f in rejected]
    lines += ["", "## Escape by family", "", "![escape by family](escape_by_family.png)", ""]
    families = sorted({f for s in summary.scores.values() for f in s.report.per_family})
    lines.append("| checker | " + " | ".join(families) + " |")
    lines.append("| --- " * (len(families) + 1) + "|")
    for name, s in {**summary.scores, **({GATE_ROW: gate} if gate is not None else {})}.items():
        cells = [(f"{_pct(1 - s.report.per_family[f].rate)} of {s.report.per_family[f].total}"
                  if f in s.report.per_family else "-") for f in families]
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
    for name, s in {**summary.scores, **({GATE_ROW: gate} if gate is not None else {})}.items():
        esc = s.escaped
        lines.append(f"- {name}: {len(esc)}" + (f" (e.g. {', '.join(f'`{m}`' for m in esc[:5])})" if esc else ""))
    missing = {n: s.missing_inputs for n, s in summary.scores.items() if s.missing_inputs}
    if missing:
        lines += ["", "Suite inputs not in the kill matrix (scored on the inputs that were run):", ""]
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
