"""What a policy reads is what it is judged by: every statement of the task prompt, and the
statements of the doc pages about the same things, checked against the code that does it.

* headers: the prompt's list is `runtime.headers.ALLOWED_HEADERS`, the submission check takes each
  of them and refuses another; a doc page includes or calls allowed only headers of that table;
* shapes and values: every shape and every value recipe the prompt names exists and reaches the
  problem (an input of the suite, the pool of record or the fresh stage's shape patterns can have
  it), every one that reaches it is named, each has the line its table writes, and what a line
  says of the dims or the values holds for drawn inputs (non-finite values above all);
* tolerances: the numbers of the prompt are the gate's stages' comparators, or the problem's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mutagym.envs import gate as gate_module
from mutagym.envs.gate import RewardGate, default_contract
from mutagym.envs.kernel_task import MAX_OBSERVATION_CHARS
from mutagym.envs.pool import PoolRegistry
from mutagym.rewards import generators, shapes
from mutagym.rewards.checker import default_checker
from mutagym.rewards.generators import ALL_GENERATORS, DATA_ROLES, FAMILIES, GENERATORS, why_not
from mutagym.rewards.moves import generate_from_id
from mutagym.rewards.shapes import SHAPE_CLASSES, draw_dims, main_dim, shape_classes
from mutagym.runtime import SubmissionError, parse_submission
from mutagym.runtime.headers import ALLOWED_HEADERS
from mutagym.substrates.catalog import load_problem
from mutagym.substrates.prompt import task_prompt

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Problems whose prompts are checked: between them every value family (`hundreds` needs half
#: precision data, `long_tail` probabilities, `masked` logits and labels), norm parameters,
#: running variances, the product problems' missing families and the exp activations' `overflow`.
PROBLEMS = ("relu", "softmax_bf16", "cross_entropy", "layernorm", "batchnorm", "kl_div", "cumprod", "sigmoid")


@pytest.fixture(scope="module")
def gate() -> RewardGate:
    """The gate every reward uses by default (`default_contract`'s), to ask what its stages run."""
    return RewardGate(default_checker(), PoolRegistry(), None)


def prompt(problem: str) -> str:
    return task_prompt(problem, default_contract(problem))


def listed(text: str, heading: str) -> dict[str, str]:
    """name -> line of the indented list under the prompt's line that starts with `heading`."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    assert start is not None, f"the prompt has no line starting {heading!r}"
    out = {}
    for line in lines[start + 1:]:
        m = re.fullmatch(r"  (\S+(?:, \S+)*): (.+)", line)
        if m is None:
            break
        out[m[1]] = m[2]
    return out


def named_shapes(problem: str) -> dict[str, str]:
    return listed(prompt(problem), "Shapes a case can have")


def named_values(problem: str) -> dict[str, str]:
    return listed(prompt(problem), "Values a case can hold")


def reaching(gate: RewardGate, problem: str) -> tuple[set[str], set[str]]:
    """(value recipes, shapes) an input of some stage can have: the suite's and the pool's inputs
    (the fresh stage redraws their patterns) and the fresh stage's shape patterns."""
    refs = [*gate.checker.inputs_for(problem), *gate.pool_stage(problem).refs]
    patterns = gate_module._shape_patterns(problem)
    return ({r.generator for r in refs} | {g for g, _ in patterns},
            {r.preset for r in refs} | {s for _, s in patterns})


# ---------------------------------------------------------------------------------- headers
class TestHeaders:
    def test_the_prompt_lists_the_headers_table(self):
        m = re.search(r"Allowed headers \(every other #include is refused\):\s*(.+?)\. No host code",
                      prompt("relu"), re.S)
        assert m is not None, "the prompt names no allowed headers"
        assert [h.strip() for h in m[1].split(",")] == list(ALLOWED_HEADERS)

    def test_the_submission_check_takes_each_and_refuses_another(self):
        source = load_problem("relu").kernel_sources()["substrate"]
        for header in ALLOWED_HEADERS:
            parse_submission(source.replace("*/\n", f"*/\n#include <{header}>\n", 1))
        with pytest.raises(SubmissionError, match="#include '<vector>' is not allowed"):
            parse_submission(source.replace("*/\n", "*/\n#include <vector>\n", 1))

    @pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
    def test_a_page_includes_only_allowed_headers(self, page):
        text = page.read_text()
        for header in re.findall(r"#include\s*[<\"]([^>\"]+)[>\"]", text):
            assert header in ALLOWED_HEADERS, f"{page.name} includes {header!r}, which a submission may not"
        for paragraph in re.split(r"\n\s*\n", text):
            if re.search(r"allowed headers?", paragraph, re.I):
                for header in re.findall(r"`([\w/]+\.h)`", paragraph):
                    assert header in ALLOWED_HEADERS, f"{page.name} calls {header!r} allowed"


class TestCounts:
    @pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
    def test_a_page_counts_the_tables(self, page):
        """`18 role-aware input generators`, `9 value families`, `31 shape classes`: the tables' sizes."""
        text = page.read_text()
        for count, table in ((r"(\d+) role-aware input generators", GENERATORS),
                             (r"(\d+) value families", FAMILIES), (r"(\d+) shape classes", SHAPE_CLASSES)):
            for n in re.findall(count, text):
                assert int(n) == len(table), f"{page.name}: {count.split(')')[1].strip()!r} says {n}, " \
                                             f"the table has {len(table)}"


# ---------------------------------------------------------------------------------- shapes and values
@pytest.mark.parametrize("problem", PROBLEMS)
class TestShapesAndValues:
    def test_what_is_named_is_what_reaches(self, gate, problem):
        values, shape_names = reaching(gate, problem)
        named_v, named_s = set(named_values(problem)), set(named_shapes(problem))
        assert named_v == values, (f"named but never drawn: {sorted(named_v - values)}; drawn but not named: "
                                   f"{sorted(values - named_v)}")
        assert named_s == shape_names, (f"named but never drawn: {sorted(named_s - shape_names)}; drawn but "
                                        f"not named: {sorted(shape_names - named_s)}")

    def test_every_name_exists_for_the_problem(self, problem):
        p = load_problem(problem)
        for name in named_values(problem):
            base = name.partition("*")[0]
            assert base in ALL_GENERATORS and not why_not(p, base), name
        for name in named_shapes(problem):
            assert (name[1:] in shape_classes(p)) if name.startswith("@") else name in p.preset_names, name

    def test_each_line_is_its_tables(self, problem):
        p = load_problem(problem)
        assert named_values(problem) == {g: generators.describe(p, g) for g in named_values(problem)}
        assert named_shapes(problem) == {s: shapes.describe(p, s) for s in named_shapes(problem)}

    def test_what_a_shape_line_says_holds(self, problem):
        p = load_problem(problem)
        for name, line in named_shapes(problem).items():
            if not name.startswith("@"):
                assert line == ", ".join(f"{d} = {v}" for d, v in p.preset(name).items()), name
                continue
            for seed in range(3):
                dims = draw_dims(p, name[1:], seed)
                assert shape_line_holds(p, line, dims), (name, line, dims)

    def test_what_a_value_line_says_holds(self, problem):
        """Non-finite values appear exactly where a line says so (on the remainder and tiny shapes,
        three seeds each), and the structure a line states holds in the data inputs."""
        p = load_problem(problem)
        for name, line in named_values(problem).items():
            found = set()
            for preset in ("remainder", "tiny"):
                for seed in range(3):
                    g = generate_from_id(f"{problem}:{name}:{preset}:{seed}")
                    for spec in p.inputs:
                        arr = np.asarray(g.inputs[spec.name], dtype=np.float64)
                        found |= {v for v, hit in (("NaN", np.isnan(arr).any()), ("-inf", (arr == -np.inf).any()),
                                                   ("+inf", (arr == np.inf).any())) if hit}
                        if spec.role in DATA_ROLES:
                            assert value_line_holds(line, arr), (name, spec.name, line)
            said = set(re.findall(r"holds ((?:[-+]inf|NaN)(?: and (?:[-+]inf|NaN))*)", line))
            said = {v for s in said for v in s.split(" and ")}
            assert found == said, f"{name}: the line says {sorted(said) or 'finite'}, the inputs hold {sorted(found)}"

    def test_the_prompt_fits_what_a_policy_is_shown(self, problem):
        """The multi-turn observation keeps the first half of `MAX_OBSERVATION_CHARS` of the prompt."""
        assert len(prompt(problem)) <= MAX_OBSERVATION_CHARS // 2


def shape_line_holds(p, line: str, dims: dict) -> bool:
    """What a shape class's line says of the main dim (residues, block edges, ranges) and of every
    dim (tiny, >= 2, some 1), for `dims`."""
    main = dims[main_dim(p)]
    checks = []
    if m := re.match(rf"{main_dim(p)} % (\d+) == (\d+)", line):
        checks.append(main % int(m[1]) == int(m[2]))
    if re.match(rf"{main_dim(p)} odd", line):
        checks.append(main % 2 == 1)
    if m := re.match(rf"{main_dim(p)} = k \* (\d+) ([+-]) 1", line):
        b, sign = int(m[1]), m[2]
        checks.append(main % b == (1 if sign == "+" else b - 1) and main >= (b + 1 if sign == "+" else b - 1))
    if m := re.match(rf"{main_dim(p)} in (\d+)\.\.(\d+)", line):
        checks.append(int(m[1]) <= main <= int(m[2]))
    if line.startswith("every dim 1..3"):
        checks.append(all(v <= 3 for v in dims.values()))
    if line.startswith("every dim 2 or more"):
        checks.append(all(v >= 2 for v in dims.values()))
    if line.startswith("one or more dims 1"):
        checks.append(any(v == 1 for v in dims.values()))
    return all(checks)


def value_line_holds(line: str, arr: np.ndarray) -> bool:
    """What a value line says of the data inputs' values: integer ranges, grids, sorted rows, rows
    of zeros or negatives, multiples."""
    rows = arr.reshape(-1, arr.shape[-1]) if arr.ndim > 1 else arr.reshape(1, -1)
    checks = []
    if m := re.search(r"integers in \[(-?\d+), (-?\d+)\]", line):
        checks.append(np.all(arr == np.round(arr)) and arr.min() >= int(m[1]) and arr.max() <= int(m[2]))
    if m := re.search(r"on \{([-\d., ]+)\}", line):
        checks.append(np.isin(arr, [float(v) for v in m[1].split(",")]).all())
    if "sorted ascending along each row" in line:
        checks.append(np.all(np.diff(rows, axis=1) >= 0))
    if "rows 0, 3, 6, ... all 0" in line and len(rows) > 1:
        checks.append(np.all(rows[::3] == 0))
    if "rows 0, 2, 4, ... all negative" in line:
        checks.append(np.all(rows[::2] < 0))
    if m := re.search(r"multiples of (\d+) from (\d+) to (\d+)", line):
        step, low, high = map(int, m.groups())
        checks.append(np.all(arr % step == 0) and np.abs(arr).min() >= low and np.abs(arr).max() <= high)
    return all(checks)


# ---------------------------------------------------------------------------------- tolerances
STAGE = r"{stage} at atol = (\S+), rtol = (\S+) \((every element must pass|at least (\S+) % of the elements must pass)\)"


def stated(text: str, stage: str) -> tuple[float, float, float]:
    m = re.search(STAGE.format(stage=stage), text)
    assert m is not None, f"the prompt states no tolerance for {stage!r}"
    return float(m[1]), float(m[2].rstrip(";,")), 1.0 if m[4] is None else float(m[4]) / 100


@pytest.mark.parametrize("problem", PROBLEMS)
class TestTolerances:
    def test_the_gates_numbers(self, gate, problem):
        text = prompt(problem)
        pool = gate.pool_stage(problem).checker
        for stage, c in (("hardened suite", gate.checker.comparator_for(problem)),
                         ("pool of record", pool.comparator_for(problem)),
                         ("fresh cases drawn at every evaluation", pool.comparator_for(problem))):
            assert stated(text, stage) == (c.atol, c.rtol, c.matched_ratio), stage
            rule = "a NaN passes only where the reference is NaN" if c.nan_matches else "a NaN never passes"
            assert rule in text, stage

    def test_the_envelope_rule_is_the_gates(self, gate, problem):
        text = " ".join(prompt(problem).split())
        r = gate.rule
        assert (f"within {r.multiple:g}x the largest error" in text and f"or {r.least_share:g} of the "
                f"tolerance budget, or {r.ulps:g} ulps" in text)
        assert (f"may take {r.time_multiple:g}x the CPU time the slowest reference kernel takes" in text
                and f"at least {r.time_floor_s:g} s and at most {r.time_cap_s:g} s" in text)

    def test_the_problems_own_numbers_without_a_gate(self, problem):
        t = load_problem(problem).spec.tolerance
        assert stated(task_prompt(problem), "Checked against the reference") == (t.atol, t.rtol, t.matched_ratio)


# ---------------------------------------------------------------------------------- the search
def test_the_prompt_names_every_move_the_search_makes_and_its_budget():
    from mutagym.envs.gate import SEARCH_BUDGET
    from mutagym.rewards.moves import moves_for
    text = prompt("softmax")
    named = listed(text, "Then a search seeks")
    assert {name: line for names, line in named.items() for name in names.split(", ")} == {
        name: move.text for name, move in moves_for(load_problem("softmax")).items()}
    assert "nan_middle" not in prompt("matvec")     # no value of matvec's is ever non-finite
    flat = " ".join(text.split())
    assert f"up to {SEARCH_BUDGET.candidates} cases" in flat and f"{SEARCH_BUDGET.max_elements:,} elements" in flat
    assert f"at most {SEARCH_BUDGET.sweep_elements:,} elements" in flat


# ---------------------------------------------------------------------------------- checker versions
def test_the_reward_page_names_the_versions_that_load():
    """docs/reward.md's table of checker versions: each `<name>-<hash12>` is what that preset (or,
    for `hardened`, the committed default) hashes to today."""
    from mutagym.rewards.checker import load_checker
    text = (ROOT / "docs" / "reward.md").read_text()
    table = text.split("| version | what |", 1)[1].split("\n\n", 1)[0]
    named = re.findall(r"^\| `([a-z-]+)-([0-9a-f]{12})` \|", table, re.M)
    assert {name for name, _ in named} >= {"kernelbench", "kernelbench-verified", "sol-execbench", "fuzz", "hardened"}
    for name, digest in named:
        checker = default_checker() if name == "hardened" else load_checker(name)
        assert checker.version_id == f"{name}-{digest}", f"docs/reward.md names {name}-{digest}"
