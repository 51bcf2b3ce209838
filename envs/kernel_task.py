"""`KernelTaskEnv`: write a CUDA kernel for a problem, get the hardened checker's reward.

Registered on `import mutagym` as `mutagym/KernelTask-v0` (one turn) and
`mutagym/KernelTaskMultiTurn-v0` (feedback turns, `max_turns=4`).

* Observation: text, the task prompt (`mutagym prompt ID`), then after each turn of a multi-turn
  episode the feedback: the category, the compile log or the outcome, and per failing input its
  position, shape preset and error statistics. Never the hidden inputs, their generators or seeds.
* Action: text, the submission (at most `MAX_SOURCE_CHARS` characters); both spaces use
  `string.printable`. A longer or non-printable text is judged as a source error, not refused.
* `reset(seed=..., options={"problem": id})` picks the problem (given, else drawn with the env's
  seeded generator among `problems`).
* `step(source)` judges the submission (`envs.judge.Judge`): parse, compile gate, checker, and the
  prescreen on Ray in parallel. A one-turn episode ends with `terminated=True`; a multi-turn one
  ends on acceptance (`terminated`) or after `max_turns` (`truncated`).
* `info`: `Judgement.info()` (verdict, checker version, outcome, per-input summary, `prescreen`,
  `infra_error`) plus `turn`; deterministic, no timings. `env.leakage` holds the running totals.

Vectorised: `gym.vector.SyncVectorEnv([...])`, or `gym.vector.AsyncVectorEnv([...],
shared_memory=False)` (Gymnasium's shared memory does not carry text observations). Each
subprocess of an AsyncVectorEnv has its own judge: give `address=` (or set `RAY_ADDRESS`) so their
prescreens share one cluster instead of starting one each.

>>> import gymnasium as gym, mutagym
>>> env = gym.make("mutagym/KernelTask-v0", problems=["relu"], prescreen=False)   # doctest: +SKIP
>>> obs, info = env.reset(seed=0)                                                 # doctest: +SKIP
>>> obs, reward, terminated, truncated, info = env.step(source)                   # doctest: +SKIP
"""

from __future__ import annotations

import fnmatch
import string
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from ..rewards.checker import CheckerVersion
from ..substrates.catalog import Problem, list_problems, load_problem
from ..substrates.prompt import task_prompt
from .judge import MAX_SOURCE_CHARS, Judge, Judgement, RewardShaping

__all__ = ["CHARSET", "KernelTaskEnv", "MAX_OBSERVATION_CHARS", "select_problems"]

#: The characters of both text spaces.
CHARSET = string.printable
#: The longest observation: the prompt plus the feedback of every turn, trimmed from the middle.
MAX_OBSERVATION_CHARS = 32768
_FEEDBACK_CHARS = 4000


def select_problems(problems: Sequence[str] | str | Callable[[Problem], bool] | None) -> list[str]:
    """Problem ids from ids, a comma-separated string of ids or glob patterns (`"layernorm,soft*"`),
    or a predicate on `Problem`; None: the whole catalog.

    >>> select_problems("relu,softmax_b*")
    ['relu', 'softmax_bf16']
    """
    catalog = list_problems()
    if problems is None:
        return catalog
    if callable(problems):
        chosen = [p for p in catalog if problems(load_problem(p))]
    else:
        patterns = problems.split(",") if isinstance(problems, str) else list(problems)
        chosen = []
        for pattern in (p.strip() for p in patterns):
            matches = fnmatch.filter(catalog, pattern)
            if not matches:
                raise ValueError(f"problems: {pattern!r} matches no problem of the catalog "
                                 f"(`mutagym problems` lists them)")
            chosen += [m for m in matches if m not in chosen]
    if not chosen:
        raise ValueError("problems: the filter selects no problem")
    return sorted(chosen)


def _printable(text: str) -> str:
    return "".join(ch if ch in CHARSET else "?" for ch in text)


class KernelTaskEnv(gym.Env):
    """One kernel-writing task per episode, rewarded by a checker version (see module docstring).

    Arguments:
        problems: ids, a filter string or a predicate (`select_problems`); default: the catalog.
        checker: a `CheckerVersion`, preset name or file; default: the committed hardened checker.
        max_turns: 1 for one-turn episodes; more for feedback turns.
        shaping: `RewardShaping` (default binary) or a dict of its fields.
        backend: `auto`, `cpu` or `cuda` for the checker runs.
        prescreen: run every kernel against the pool of record on Ray workers.
        fresh_seeds: redraw the checker's suite at every evaluation (gated valid); `secret`
            seeds the draws (default: random).
        judge: share one `Judge` between environments (its options then win over the ones above).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, problems: Sequence[str] | str | Callable[[Problem], bool] | None = None, *,
                 checker: CheckerVersion | str | None = None, max_turns: int = 1,
                 shaping: RewardShaping | dict | None = None, backend: str = "auto", prescreen: bool = True,
                 fresh_seeds: bool = False, secret: int | str | None = None, workers: int | None = None,
                 address: str | None = None, judge: Judge | None = None, render_mode: str | None = None):
        if max_turns < 1:
            raise ValueError(f"KernelTaskEnv(max_turns={max_turns!r}): must be >= 1")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"KernelTaskEnv(render_mode={render_mode!r}): only 'ansi' is supported")
        self.problems = select_problems(problems)
        self.max_turns = max_turns
        self.render_mode = render_mode
        if isinstance(shaping, dict):
            shaping = RewardShaping(**shaping)
        self.judge = judge or Judge(checker, prescreen=prescreen, backend=backend, shaping=shaping,
                                    fresh_seeds=fresh_seeds, secret=secret, workers=workers, address=address)
        self._owns_judge = judge is None
        self.observation_space = spaces.Text(max_length=MAX_OBSERVATION_CHARS, charset=CHARSET)
        self.action_space = spaces.Text(max_length=MAX_SOURCE_CHARS, charset=CHARSET)
        self.problem: str | None = None
        self.turn = 0
        self._observation = ""
        self._last: Judgement | None = None

    @property
    def leakage(self) -> dict[str, dict[str, float]]:
        """Running leakage totals per checker version (see `envs.judge.LeakageLedger`)."""
        return self.judge.leakage.as_dict()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        unknown = set(options) - {"problem"}
        if unknown:
            raise ValueError(f"reset(options=...): unknown option(s) {sorted(unknown)}; known: ['problem']")
        problem = options.get("problem")
        if problem is None:
            problem = self.problems[int(self.np_random.integers(len(self.problems)))]
        elif problem not in self.problems:
            raise ValueError(f"reset(options={{'problem': {problem!r}}}): not one of this env's problems "
                             f"({', '.join(self.problems[:8])}{', ...' if len(self.problems) > 8 else ''})")
        self.problem, self.turn, self._last = problem, 0, None
        self._observation = _printable(task_prompt(problem, self.judge.contract(problem)))[:MAX_OBSERVATION_CHARS]
        return self._observation, {"problem": problem, "checker": self.judge.checker_id,
                                   "max_turns": self.max_turns}

    def step(self, action: str):
        if self.problem is None:
            raise RuntimeError("step() before reset(): call env.reset() first")
        if self.turn >= self.max_turns or (self._last is not None and self._last.accepted):
            raise RuntimeError("step() after the episode ended: call env.reset()")
        self.turn += 1
        judgement = self.judge.judge(action, self.problem)
        self._last = judgement
        terminated = judgement.accepted or self.max_turns == 1
        truncated = not terminated and self.turn >= self.max_turns
        if self.max_turns > 1:
            self._observation = self._with_feedback(judgement)
        info = judgement.info()
        info["turn"] = self.turn
        return self._observation, float(judgement.reward), terminated, truncated, info

    def _with_feedback(self, j: Judgement) -> str:
        text = f"\n\n## Feedback on submission {self.turn} of {self.max_turns}\n\n{feedback(j)}"
        obs = self._observation + _printable(text)
        if len(obs) > MAX_OBSERVATION_CHARS:      # keep the prompt and the newest feedback
            head = _printable(task_prompt(self.problem, self.judge.contract(self.problem)))[:MAX_OBSERVATION_CHARS // 2]
            obs = head + "\n[...]\n" + obs[-(MAX_OBSERVATION_CHARS - len(head) - 7):]
        return obs

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._observation
        return None

    def close(self) -> None:
        if self._owns_judge:
            self.judge.close()
        super().close()


def feedback(j: Judgement) -> str:
    """What a policy is told about its submission: never the hidden inputs themselves."""
    if j.category == "correct":
        return "Accepted: every hidden input matched the float64 reference."
    if j.category == "infra_error":
        return "The environment failed to judge this submission (not your kernel's fault); submit again."
    if j.category in ("source_error", "compile_error"):
        kind = "The submission is not valid" if j.category == "source_error" else "Compilation failed"
        return f"{kind}:\n{j.message[:_FEEDBACK_CHARS]}"
    lines = [f"Rejected ({j.outcome}): {sum(not i['passed'] for i in j.inputs)} of {len(j.inputs)} "
             "hidden inputs failed."]
    for i in j.inputs:
        if i["passed"]:
            continue
        if i["outcome"] != "ok":
            lines.append(f"- input {i['index']} ({i['preset']} shape): {i['outcome']}")
        else:
            ratio = i["mismatch_ratio"]
            lines.append(f"- input {i['index']} ({i['preset']} shape): max abs error {_num(i['max_abs'])}, "
                         f"max rel error {_num(i['max_rel'])}, "
                         f"{_num(None if ratio is None else 100 * ratio)}% of elements outside tolerance")
    if j.category == "runtime_fault":
        lines.append(f"First fault: {j.message[:500]}")
    return "\n".join(lines)[:_FEEDBACK_CHARS]


def _num(x: float | None) -> str:
    return "inf/nan" if x is None else f"{x:.3g}"
