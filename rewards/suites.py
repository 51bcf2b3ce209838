"""Suite optimisation over a kill matrix, held-out evaluation and detection-rate scoring.

Everything here works on a plain in-memory boolean kill matrix `K` (rows: mutants, columns:
candidate inputs of one problem; `K[i, j]` is True when input j kills mutant i in some schedule).
Only valid inputs may be candidates (pass `valid=` to drop the others). A mutant is *coverable*
when some candidate kills it; only coverable (witnessed) mutants are targets.

| function | what |
| --- | --- |
| `greedy_cover` | greedy cover / budget coverage; ties: most newly killed, then smallest input id |
| `exact_cover` | HiGHS MIP: fewest inputs covering all, or most mutants covered by <= k inputs |
| `select_suite` | either (`exact="auto"`: HiGHS for small instances); returns a `Suite` |
| `fill_budget` | spend a budget the cover left unused on second witnesses (redundancy) |
| `hash_split`, `heldout_evaluation` | 50 % hash split: select on one half, score the other |
| `detection_rate`, `bootstrap_interval` | overall / family / problem rates; seeded 95 % bootstrap |

`killed_matrix` turns kill-matrix rows (`mutant_id`, `input_id`, `outcome`, any schedule) into `K`.

>>> K = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]], bool)
>>> s = select_suite(K, ["a", "b", "c"], ["m1", "m2", "m3", "m4"])
>>> s.inputs, s.covered, s.uncovered
(['a', 'b', 'c'], ['m1', 'm2', 'm3', 'm4'], [])
>>> select_suite(K, ["a", "b", "c"], ["m1", "m2", "m3", "m4"], budget=1).inputs
['a']
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .judging import OK

__all__ = ["DetectionReport", "HeldoutResult", "Rate", "Suite", "bootstrap_interval",
           "detection_rate", "exact_cover", "fill_budget", "greedy_cover", "hash_split", "heldout_evaluation",
           "killed_matrix", "select_suite"]

#: `exact="auto"` uses HiGHS when the candidate matrix has at most this many cells.
EXACT_AUTO_CELLS = 200_000
#: Kill-matrix outcomes that are not kills (everything else rejects the mutant).
NOT_KILLED = (OK,)


# ---------------------------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------------------------

def killed_matrix(rows: Iterable[Mapping], mutant_ids: Sequence[str] | None = None,
                  input_ids: Sequence[str] | None = None) -> tuple[np.ndarray, list[str], list[str]]:
    """`(K, mutant_ids, input_ids)` from kill-matrix rows (dicts with `mutant_id`, `input_id`,
    `outcome`; e.g. `outcomes_table.to_pylist()`). A cell is killed if any schedule's outcome is
    not `ok` (wrong, memory_fault, sync_error, timeout, crash, ...). Ids default to the sorted
    ids seen; rows naming other ids are ignored (pass only valid inputs to keep only those).

    >>> K, m, i = killed_matrix([{"mutant_id": "m1", "input_id": "a", "outcome": "ok"},
    ...                          {"mutant_id": "m1", "input_id": "a", "outcome": "wrong"},
    ...                          {"mutant_id": "m2", "input_id": "a", "outcome": "ok"}])
    >>> K.tolist(), m, i
    ([[True], [False]], ['m1', 'm2'], ['a'])
    """
    rows = list(rows)
    mutant_ids = list(mutant_ids) if mutant_ids is not None else sorted({r["mutant_id"] for r in rows})
    input_ids = list(input_ids) if input_ids is not None else sorted({r["input_id"] for r in rows})
    mi = {m: k for k, m in enumerate(mutant_ids)}
    ii = {x: k for k, x in enumerate(input_ids)}
    K = np.zeros((len(mutant_ids), len(input_ids)), bool)
    for r in rows:
        a, b = mi.get(r["mutant_id"]), ii.get(r["input_id"])
        if a is not None and b is not None and r["outcome"] not in NOT_KILLED:
            K[a, b] = True
    return K, mutant_ids, input_ids


def _check(K, input_ids, mutant_ids) -> np.ndarray:
    K = np.asarray(K, dtype=bool)
    if K.ndim != 2 or K.shape != (len(mutant_ids), len(input_ids)):
        raise ValueError(f"kill matrix has shape {K.shape}, expected (mutants, inputs) = "
                         f"({len(mutant_ids)}, {len(input_ids)})")
    if len(set(input_ids)) != len(input_ids) or len(set(mutant_ids)) != len(mutant_ids):
        raise ValueError("input ids and mutant ids must be unique")
    return K


# ---------------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------------

def greedy_cover(K: np.ndarray, input_ids: Sequence[str], budget: int | None = None) -> list[int]:
    """Column indices chosen greedily: each step takes the input that kills the most mutants not
    yet killed, ties broken by the smallest input id; stops when every coverable mutant is killed
    or `budget` inputs are chosen.

    >>> greedy_cover(np.array([[1, 1], [1, 1]], bool), ["b", "a"])
    [1]
    """
    K = np.asarray(K, bool)
    order = sorted(range(len(input_ids)), key=lambda j: input_ids[j])     # tie-break order
    alive = K.any(axis=1)
    chosen: list[int] = []
    limit = len(input_ids) if budget is None else budget
    while alive.any() and len(chosen) < limit:
        gains = K[alive].sum(axis=0)
        best = max(order, key=lambda j: gains[j])     # max keeps the first of equal gains
        if gains[best] == 0:
            break
        chosen.append(best)
        alive &= ~K[:, best]
    return chosen


def _reduce_columns(K: np.ndarray, input_ids: Sequence[str]) -> list[int]:
    """Columns worth keeping: drop an input whose kills are a subset of another's (an equal one
    with a larger id included). Swapping it for the superset never covers less, so both optima
    survive the reduction."""
    order = sorted(range(K.shape[1]), key=lambda j: input_ids[j])
    keep: list[int] = []
    counts = K.sum(axis=0)
    for j in order:
        if counts[j] == 0:
            continue
        contains = ~(K[:, [j]] & ~K).any(axis=0)           # columns l with kills(j) <= kills(l)
        contains[j] = False
        bigger = contains & (counts > counts[j])
        equal_earlier = [l for l in keep if contains[l] and counts[l] == counts[j]]
        if not bigger.any() and not equal_earlier:
            keep.append(j)
    return keep


def _reduce_rows(K: np.ndarray, dominance: bool) -> tuple[np.ndarray, np.ndarray]:
    """`(distinct coverable rows, their multiplicity)`; with `dominance`, also drop rows whose kill
    set contains another row's (killing the smaller set kills them; right for full cover only)."""
    rows, weight = np.unique(K[K.any(axis=1)], axis=0, return_counts=True)
    if dominance and len(rows) > 1:
        size = rows.sum(axis=1)
        keep = [i for i in range(len(rows))
                if not any(size[k] < size[i] and not (rows[k] & ~rows[i]).any() for k in range(len(rows)))]
        rows, weight = rows[keep], weight[keep]
    return rows, weight


def _silent_highs(highspy):
    """A `Highs` solver whose construction does not print HiGHS's banner on our stdout (it is
    written by the C++ library to file descriptor 1 before any option can turn it off)."""
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def exact_cover(K: np.ndarray, input_ids: Sequence[str], budget: int | None = None, *,
                time_limit_s: float = 10.0) -> tuple[list[int], bool]:
    """`(columns, optimal)` from HiGHS. Without `budget`: the fewest inputs that kill every
    coverable mutant (min sum x_j, sum_j K_ij x_j >= 1 for each coverable i). With `budget=k`:
    the most mutants covered by at most k inputs (max sum y_i - eps sum x_j, y_i <= sum_j K_ij x_j,
    sum x_j <= k; eps = 1/(k+1) never trades a mutant for an input, so among equal coverage the
    fewest inputs win). Dominated inputs, duplicate mutants and (for a full cover) mutants that a
    smaller kill set implies are removed first; the greedy answer is the warm start. Columns come
    back in input-id order; `optimal` is False when the time limit stopped HiGHS first (the columns
    are then its best answer, never worse than greedy's).

    >>> exact_cover(np.array([[1, 0, 1], [0, 1, 1]], bool), ["a", "b", "c"])
    ([2], True)
    """
    import highspy

    K = np.asarray(K, bool)
    if not K.any() or budget == 0:
        return [], True
    cols = _reduce_columns(K, input_ids)
    rows, weight = _reduce_rows(K[:, cols], dominance=budget is None)
    n_in, n_rows = len(cols), len(rows)
    start_cols = greedy_cover(K[:, cols], [input_ids[j] for j in cols], budget)    # warm start
    h = _silent_highs(highspy)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    starts, index, vals = [0], [], []
    if budget is None:
        n_var = n_in
        lp.col_cost_ = np.ones(n_in)
        for r in range(n_rows):                   # sum_j K_rj x_j >= 1
            index.extend(np.flatnonzero(rows[r]).tolist())
            starts.append(len(index))
        vals = [1.0] * len(index)
        row_lower, row_upper = np.ones(n_rows), np.full(n_rows, inf)
        warm = np.zeros(n_var)
        warm[start_cols] = 1.0
    else:
        # variables: x_0..x_{n-1}, y_0..y_{m-1}; minimise eps*sum x - sum w_r y_r
        n_var = n_in + n_rows
        eps = 1.0 / (budget + 1)
        lp.col_cost_ = np.concatenate([np.full(n_in, eps), -weight.astype(float)])
        for r in range(n_rows):                   # y_r - sum_j K_rj x_j <= 0
            cs = np.flatnonzero(rows[r]).tolist()
            index.extend(cs + [n_in + r])
            vals.extend([-1.0] * len(cs) + [1.0])
            starts.append(len(index))
        index.extend(range(n_in))                 # sum x_j <= k
        vals.extend([1.0] * n_in)
        starts.append(len(index))
        row_lower = np.full(n_rows + 1, -inf)
        row_upper = np.concatenate([np.zeros(n_rows), [float(budget)]])
        warm = np.zeros(n_var)
        warm[start_cols] = 1.0
        warm[n_in:] = rows[:, start_cols].any(axis=1) if start_cols else 0.0
    lp.num_col_, lp.num_row_ = n_var, len(starts) - 1
    lp.col_lower_, lp.col_upper_ = np.zeros(n_var), np.ones(n_var)
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(vals, dtype=float)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n_var
    h.passModel(lp)
    solution = highspy.HighsSolution()
    solution.col_value = warm.tolist()
    solution.value_valid = True
    h.setSolution(solution)
    h.run()
    status = h.getModelStatus()
    done = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit)
    x = np.asarray(h.getSolution().col_value[:n_in])
    if status not in done:
        raise RuntimeError(f"HiGHS failed on a {K.shape} set-cover instance: "
                           f"{h.modelStatusToString(status)}")
    picked = [cols[j] for j in range(n_in) if x.size == n_in and x[j] > 0.5]
    return sorted(picked, key=lambda j: input_ids[j]), status == highspy.HighsModelStatus.kOptimal


def fill_budget(K: np.ndarray, input_ids: Sequence[str], chosen: Sequence[int], budget: int,
                kind: Callable[[str], str] = lambda x: x) -> list[int]:
    """`chosen` plus inputs up to `budget`, for redundancy: each added input is of a `kind` (e.g.
    its generator) the suite does not hold yet when one is left, and kills the most target mutants
    the suite so far kills only once (then the most mutants, then the smallest id).

    A cover that needs fewer inputs than the budget is fitted to the mutants it was chosen on; a
    second witness per mutant, drawn from another distribution, is what carries detection to unseen
    mutants of the same faults (an extreme input can cover a whole sample and still be blind to a
    fault a dense random input shows: the paper's best suites pair the two). Inputs that add no
    second kill are not added.

    >>> K = np.array([[1, 1, 0], [1, 1, 1], [1, 0, 1]], bool)
    >>> fill_budget(K, ["a:1", "a:2", "b:1"], [0], 2), fill_budget(K, ["a:1", "a:2", "b:1"], [0], 2, lambda x: x[0])
    ([0, 1], [0, 2])
    """
    K = np.asarray(K, bool)
    cols = list(chosen)
    order = sorted(range(len(input_ids)), key=lambda j: input_ids[j])
    while len(cols) < budget:
        hits = K[:, cols].sum(axis=1) if cols else np.zeros(K.shape[0], int)
        once = hits == 1
        held = {kind(input_ids[j]) for j in cols}
        free = [j for j in order if j not in cols]
        fresh = [j for j in free if kind(input_ids[j]) not in held]
        if not free:
            break
        best = max(fresh or free, key=lambda j: (int((K[:, j] & once).sum()), int(K[:, j].sum())))
        if not (K[:, best] & once).any():
            break
        cols.append(best)
    return cols


@dataclass(frozen=True)
class Suite:
    """A selected suite: `inputs` (ids, in selection order), the target mutants it `covered` and
    those it left `uncovered` (unkillable by any candidate, or beyond the budget), the `method`
    used (`greedy` / `exact`) and whether the answer is proven `optimal`."""

    inputs: list[str]
    covered: list[str]
    uncovered: list[str]
    method: str = "greedy"
    optimal: bool = False

    @property
    def detection(self) -> float:
        """Fraction of the target mutants covered (1.0 when there were none)."""
        total = len(self.covered) + len(self.uncovered)
        return len(self.covered) / total if total else 1.0


def select_suite(K: np.ndarray, input_ids: Sequence[str], mutant_ids: Sequence[str], *,
                 budget: int | None = None, exact: bool | str = "auto",
                 valid: Sequence[bool] | None = None, time_limit_s: float = 10.0) -> Suite:
    """A suite of candidate inputs for one problem's kill matrix `K` (mutants x inputs).

    Without `budget`, cover every mutant some valid candidate kills with as few inputs as the
    method finds; with `budget=k`, kill as many as possible with at most k inputs. `exact=True`
    uses HiGHS, `False` the greedy rule, `"auto"` HiGHS when `K` has at most `EXACT_AUTO_CELLS`
    cells. An exact run stopped by the time limit is compared with greedy and the better answer
    kept. Invalid candidates (`valid[j]` False) are never chosen.
    """
    K = _check(K, input_ids, mutant_ids)
    if budget is not None and budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget!r}")
    if exact not in (True, False, "auto"):
        raise ValueError(f"exact must be True, False or 'auto', got {exact!r}")
    if valid is not None:
        valid = np.asarray(valid, bool)
        if valid.shape != (len(input_ids),):
            raise ValueError(f"valid has shape {valid.shape}, expected ({len(input_ids)},)")
        K = K & valid[None, :]
    use_exact = exact is True or (exact == "auto" and K.size <= EXACT_AUTO_CELLS)
    cols, method, optimal = greedy_cover(K, input_ids, budget), "greedy", False
    if use_exact:
        ex, optimal = exact_cover(K, input_ids, budget, time_limit_s=time_limit_s)
        # a time-limited answer may be incomplete: keep it only if it covers as much with no more inputs
        hits_ex = int(K[:, ex].any(axis=1).sum()) if ex else 0
        hits_g = int(K[:, cols].any(axis=1).sum()) if cols else 0
        if optimal or hits_ex > hits_g or (hits_ex == hits_g and len(ex) <= len(cols)):
            cols, method = ex, "exact"
    hit = K[:, cols].any(axis=1) if cols else np.zeros(len(mutant_ids), bool)
    return Suite([input_ids[j] for j in cols], [m for m, h in zip(mutant_ids, hit) if h],
                 [m for m, h in zip(mutant_ids, hit) if not h], method, optimal)


# ---------------------------------------------------------------------------------------------
# held-out evaluation
# ---------------------------------------------------------------------------------------------

def hash_split(mutant_ids: Iterable[str], salt: str = "heldout") -> tuple[list[str], list[str]]:
    """`(selection, heldout)`: each mutant goes to one half by the parity of sha256(salt:id),
    so the split is stable across runs and machines and about 50/50. Order is kept.

    >>> hash_split(["m1", "m2", "m3", "m4"], salt="a")
    (['m3', 'm4'], ['m1', 'm2'])
    """
    selection, heldout = [], []
    for m in mutant_ids:
        digest = hashlib.sha256(f"{salt}:{m}".encode()).digest()
        (heldout if digest[0] & 1 else selection).append(m)
    return selection, heldout


@dataclass(frozen=True)
class HeldoutResult:
    """A suite chosen on the `selection` half and its detection on both halves (witnessed only)."""

    suite: Suite
    selection: list[str]
    heldout: list[str]
    selection_rate: float
    heldout_rate: float


def heldout_evaluation(K: np.ndarray, input_ids: Sequence[str], mutant_ids: Sequence[str], *,
                       budget: int | None = None, salt: str = "heldout", exact: bool | str = "auto",
                       valid: Sequence[bool] | None = None) -> HeldoutResult:
    """Split the witnessed mutants with `hash_split`, select a suite on the selection half only,
    and report its detection on each half (the paper: 98.0 % in-sample, 94.8 % held out)."""
    K = _check(K, input_ids, mutant_ids)
    if valid is not None:
        K = K & np.asarray(valid, bool)[None, :]
    witnessed = [m for m, row in zip(mutant_ids, K) if row.any()]
    selection, heldout = hash_split(witnessed, salt)
    index = {m: i for i, m in enumerate(mutant_ids)}
    sel_rows = [index[m] for m in selection]
    suite = select_suite(K[sel_rows], input_ids, selection, budget=budget, exact=exact)
    cols = [input_ids.index(x) for x in suite.inputs] if suite.inputs else []

    def rate(ms):
        if not ms:
            return 1.0
        rows = [index[m] for m in ms]
        return float(K[np.ix_(rows, cols)].any(axis=1).mean()) if cols else 0.0

    return HeldoutResult(suite, selection, heldout, rate(selection), rate(heldout))


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rate:
    """`detected` of `total` witnessed mutants; `rate` is their ratio (nan when total is 0)."""

    detected: int
    total: int

    @property
    def rate(self) -> float:
        return self.detected / self.total if self.total else float("nan")


@dataclass(frozen=True)
class DetectionReport:
    """Detection of the witnessed pool: `overall`, and per family / per problem when given."""

    overall: Rate
    per_family: dict[str, Rate] = field(default_factory=dict)
    per_problem: dict[str, Rate] = field(default_factory=dict)


def _grouped(killed: set, witnessed: list, group_of: Mapping[str, str] | None) -> dict[str, Rate]:
    if group_of is None:
        return {}
    counts: dict[str, list[int]] = {}
    for m in witnessed:
        if m not in group_of:
            raise KeyError(f"mutant {m!r} has no entry in the grouping mapping")
        c = counts.setdefault(group_of[m], [0, 0])
        c[0] += m in killed
        c[1] += 1
    return {g: Rate(d, t) for g, (d, t) in sorted(counts.items())}


def detection_rate(killed_by_suite: Collection[str], witnessed: Iterable[str], *,
                   family_of: Mapping[str, str] | None = None,
                   problem_of: Mapping[str, str] | None = None) -> DetectionReport:
    """How many `witnessed` mutants the checker killed, overall and per family / problem.

    Only witnessed mutants count (a mutant no valid input kills is in no denominator); kills of
    other mutants are ignored.

    >>> r = detection_rate({"a", "b", "z"}, ["a", "b", "c", "d"], family_of={"a": "sync", "b": "precision",
    ...                    "c": "precision", "d": "precision"})
    >>> r.overall.rate, r.per_family["precision"]
    (0.5, Rate(detected=1, total=3))
    """
    killed = set(killed_by_suite)
    witnessed = list(dict.fromkeys(witnessed))
    overall = Rate(sum(m in killed for m in witnessed), len(witnessed))
    return DetectionReport(overall, _grouped(killed, witnessed, family_of),
                           _grouped(killed, witnessed, problem_of))


def bootstrap_interval(killed_by_suite: Collection[str], witnessed: Iterable[str],
                       problem_of: Mapping[str, str], *, n_boot: int = 2000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float, float]:
    """`(point, low, high)`: the pooled detection rate and a percentile bootstrap interval that
    resamples *problems* with replacement (mutants of one problem are not independent). Each
    replicate's rate is sum(detected) / sum(witnessed) over the drawn problems. Seeded: the same
    arguments give the same interval.

    >>> bootstrap_interval({"a"}, ["a", "b"], {"a": "p", "b": "q"}, n_boot=200, seed=1)[0]
    0.5
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    report = detection_rate(killed_by_suite, witnessed, problem_of=problem_of)
    if report.overall.total == 0:
        raise ValueError("no witnessed mutants: the detection rate is undefined")
    problems = list(report.per_problem.values())
    detected = np.array([r.detected for r in problems], float)
    total = np.array([r.total for r in problems], float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(problems), size=(n_boot, len(problems)))
    rates = detected[draws].sum(axis=1) / total[draws].sum(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(rates, [alpha, 1 - alpha])
    return report.overall.rate, float(low), float(high)
