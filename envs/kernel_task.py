"""`KernelTaskEnv`: write a CUDA kernel for a problem, get the reward gate's reward.

Registered on `import mutagym` as `mutagym/KernelTask-v0` (one turn) and
`mutagym/KernelTaskMultiTurn-v0` (feedback turns). The class docstring is the environment's
manual; its examples run as tests (`tests/envs/test_kernel_task_manual.py`).
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
from .example_printf import example_printf
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
    """One kernel-writing task per episode: the policy reads a problem's prompt and answers with a
    CUDA kernel; the reward gate (`envs.gate`) decides the reward.

    ## Description

    Each episode is one problem of the catalog (`mutagym problems`). The observation is the task
    prompt (`mutagym prompt ID`): the problem, its fp64 reference, the submission format with an
    example for another problem, and the contract the kernel is judged by (tolerances by stage,
    shapes, value families, thread orders). The action is a submission: CUDA C++ device code led by
    a `/* mutagym ... */` TOML block that says how to launch it. `step` judges it
    (`envs.judge.Judge`): parse and static checks, NVRTC, then by default the reward gate: the
    committed hardened suite, the pool of record, and fresh cases drawn at every evaluation, each in
    three thread orders, stopping at the first failure. With `checker=`, that checker alone judges
    (for audits and measurements).

    ## Action Space

    `gymnasium.spaces.Text(max_length=MAX_SOURCE_CHARS, charset=CHARSET)`: the submission, at most
    65,536 characters of `string.printable`. A longer or non-printable text is not refused: it is
    judged, as a `source_error`.

    ## Observation Space

    `gymnasium.spaces.Text(max_length=MAX_OBSERVATION_CHARS, charset=CHARSET)`:

    | part | when | what |
    | --- | --- | --- |
    | prompt | always | the task text of `substrates.prompt.task_prompt` with the judge's contract |
    | feedback | multi-turn, after each step | `## Feedback on submission k of n`: the category; the compile log, or per failing input its position, shape preset, outcome and error statistics; what the kernel printed (device `printf`) on the public example input, never on a hidden one |

    Never the hidden inputs, their generators or their seeds. Past 32,768 characters the middle
    is trimmed: the prompt and the newest feedback stay.

    ## Rewards

    Every outcome falls in one category; `shaping` (a `RewardShaping` or a dict of its fields)
    sets each category's reward, binary by default:

    | category | outcomes | default | e.g. shaped |
    | --- | --- | --- | --- |
    | `correct` | `ok`: every stage passed in every thread order | 1 | 1 |
    | `wrong` | `wrong`: an output outside the stage's tolerance | 0 | 0 |
    | `source_error` | the text fails the parser or a static check (too long, a header off the list, `asm`, no launch block) | 0 | -1 |
    | `compile_error` | NVRTC or the CPU build refuses it, or hits a compiler limit | 0 | -0.5 |
    | `runtime_fault` | `launch_error`, `memory_fault`, `sync_error`, `data_race`, `stateful_kernel`, `timeout`, `crash`, `forbidden_syscall` | 0 | -0.2 |
    | `infra_error` | mutagym itself failed (`info["infra_error"]` is True) | the `wrong` value | trainers get None |

    ## Starting State

    `reset(seed=..., options={"problem": id})` starts on `id` (one of `problems`), else on a
    problem drawn with the environment's seeded generator. The first observation is the prompt;
    the reset `info` is `{"problem", "checker", "max_turns"}` (`checker`: the gate's version).

    ## Episode End

    1. Termination: a one-turn episode (`max_turns=1`) ends after its step, whatever the verdict.
    2. Termination: a multi-turn episode ends when a submission is accepted.
    3. Truncation: a multi-turn episode ends after `max_turns` submissions none of which was
       accepted.

    A `step` after the end raises `RuntimeError`; call `reset`.

    ## Info

    `step`'s `info` is `Judgement.info()` plus `turn`: deterministic, JSON-able, no timings.

    | key | what |
    | --- | --- |
    | `verdict`, `accepted` | `"accept"` / `"reject"`, and the same as a bool |
    | `reward`, `category`, `outcome` | as in the reward table |
    | `checker` | version of the judge: `gate-<hash12>`, or the checker's `<name>-<hash12>` |
    | `problem`, `turn` | the episode's problem; the step's number, from 1 |
    | `message` | the first failure in words (a compile log line, the failing input's position) |
    | `infra_error` | True only when mutagym failed, not the kernel |
    | `inputs` | per input that ran: `index`, `generator`, `preset`, `passed`, `outcome`, `max_abs`, `max_rel`, `mismatch_ratio` (for the gate: the failing stage's, each with `stage`) |
    | `gate` | None with a plain checker or before any run; else `version`, `accepted`, `stage` and `schedule` (where it failed, None if accepted), `failing` (`generator`, `shape`, `outcome`), `stages_run`, and `checker_alone` (`checker`, `accepted`, `false_accept`: the hardened checker by itself, in ascending order, would have paid a wrong kernel) |
    | `prescreen` | with a plain checker and `prescreen=True`: the pool of record's `status`, `pool_size`, `pool_failures`, `pool_accepted`, `false_accept`, `false_reject`, `nearest_mutant` |

    `env.leakage` holds running totals per judge version (`envs.judge.LeakageLedger`).

    ## Arguments

    >>> import gymnasium as gym, mutagym
    >>> env = gym.make("mutagym/KernelTask-v0", problems="relu", prescreen=False)
    >>> prompt, info = env.reset(seed=0)
    >>> info["problem"], info["checker"].startswith("gate-"), info["max_turns"]
    ('relu', True, 1)
    >>> env.observation_space.contains(prompt), env.action_space.max_length
    (True, 65536)
    >>> obs, reward, terminated, truncated, info = env.step("not a kernel")
    >>> reward, terminated, truncated, info["category"], info["turn"]
    (0.0, True, False, 'source_error', 1)
    >>> info["message"]
    'line 1: no /* mutagym ... */ block found; a submission starts with a comment holding its [[launch]] tables'
    >>> env.close()

    | argument | type | default | description |
    | --- | --- | --- | --- |
    | `problems` | ids, a string of ids or globs (`"layernorm,soft*"`), or a predicate on `Problem` | None: the whole catalog | the problems episodes draw from (`select_problems`) |
    | `checker` | `CheckerVersion`, preset name or file | None: the reward gate | judge with this checker alone instead of the gate |
    | `max_turns` | int >= 1 | 1 (`KernelTaskMultiTurn-v0`: 4) | submissions per episode; more than 1 adds feedback |
    | `shaping` | `RewardShaping` or dict | binary | the reward of each category |
    | `backend` | `"auto"`, `"cpu"`, `"cuda"` | `"auto"` | where kernels run (auto: CuPy on a GPU, else the CPU emulator) |
    | `prescreen` | bool | True | run the gate's pool and fresh stages on Ray workers (a local cluster is started on first use, about 30 s); with a plain checker, also judge every kernel against the pool of record for `info["prescreen"]`. False: everything runs in this process |
    | `fresh_seeds` | bool | False | a plain checker's suite is redrawn at every evaluation besides its fixed inputs (the gate always draws fresh cases) |
    | `secret` | int or str | None: random | seeds the fresh draws |
    | `workers` | int | None: one per CPU | Ray workers of the prescreen |
    | `address` | str | None: `$RAY_ADDRESS`, else a local cluster | an existing Ray cluster |
    | `field_dir` | str | None: none | a field ledger folder: every kernel the gate rejects on an input is kept there with that input's id (`envs.field_ledger`; `mutagym leaks export` reads it) |
    | `judge` | `Judge` | None | share one judge between environments (its options then win over the ones above) |
    | `render_mode` | `"ansi"` or None | None | `render()` returns the observation text |

    A plain checker, a multi-turn episode and shaped rewards: a wrong kernel and a faulting one
    get feedback and their category's reward, then the correct one ends the episode.

    >>> from mutagym.substrates.catalog import load_problem
    >>> relu = load_problem("relu").kernel_sources()["substrate"]
    >>> env = KernelTaskEnv("relu", checker="kernelbench", prescreen=False, max_turns=3,
    ...                     shaping={"source_error": -1, "compile_error": -0.5, "runtime_fault": -0.2})
    >>> _ = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(relu.replace("fmaxf(v, 0.0f)", "fmaxf(v, 0.0f) + 0.5f"))
    >>> reward, terminated, truncated, info["category"], "## Feedback on submission 1 of 3" in obs
    (0.0, False, False, 'wrong', True)
    >>> obs, reward, terminated, truncated, info = env.step(relu.replace("n4 = n >> 2;", "n4 = (n >> 2) + 4096;"))
    >>> reward, terminated, truncated, info["category"], info["outcome"]
    (-0.2, False, False, 'runtime_fault', 'memory_fault')
    >>> obs, reward, terminated, truncated, info = env.step(relu)
    >>> reward, terminated, truncated, info["category"], sorted(info)
    (1.0, True, False, 'correct', ['accepted', 'category', 'checker', 'gate', 'infra_error', 'inputs', 'message', 'outcome', 'prescreen', 'problem', 'reward', 'turn', 'verdict'])
    >>> env.step(relu)
    Traceback (most recent call last):
    ...
    RuntimeError: step() after the episode ended: call env.reset()
    >>> env.close()

    Vectorised: `gym.vector.SyncVectorEnv([...])`, or `gym.vector.AsyncVectorEnv([...],
    shared_memory=False)` (Gymnasium's shared memory does not carry text observations). Each
    subprocess of an AsyncVectorEnv has its own judge: give `address=` (or set `RAY_ADDRESS`) so
    their prescreens share one cluster instead of starting one each.

    ## Version History

    The ids have stayed `-v0`; what judged the reward changed under them. The judge's version is
    in every `info["checker"]`, and the gate's first stage is the checker `configs/checkers/DEFAULT`
    names:

    >>> from mutagym.rewards.checker import default_checker
    >>> default_checker().version_id
    'hardened-403b26beafdf'

    | date | commit | judged by |
    | --- | --- | --- |
    | 2026-11-29 | 0126e06 | the `kernelbench-verified` preset, prescreened against the pool of record |
    | 2026-11-29 | b3dd010 | `hardened-4ab828be3a8a`, the hardened checker built from the whole catalog |
    | 2026-12-01 | b2994da | the reward gate (`gate-<hash12>`), first stage `hardened-4ab828be3a8a` |
    | 2026-12-01 | e65faa7 | the reward gate, first stage `hardened-1f8c9e0ebe3e` (rebuilt with shape classes; 97.9 % of 4,238 witnessed mutants, 0 of 145 correct kernels rejected) |
    | 2026-12-02 | 095cdaf | the reward gate, first stage `hardened-a754aa13a4b4` (rebuilt from 67 problems, 189 rules and the probe's field faults; 97.1 % of 4,674 witnessed faults, 0 of 153 correct kernels rejected) |
    | 2026-12-02 | b1f7681 | the reward gate, first stage `hardened-dd3143683176` (rebuilt after matmul_warp_specialized's measured budget and the bfloat16 rounding fix; 97.0 % of 4,674 witnessed faults, 0 of 153 correct kernels rejected) |
    | 2026-12-02 | adf87de | the reward gate, first stage `hardened-403b26beafdf` (rebuilt with the costly presets in the value families some fault needs and locals read before they are set made deterministic; 97.1 % of 4,679 witnessed faults, 0 of 153 correct kernels rejected) |

    A new committed checker changes the reward: it gets a row here (the example above fails
    until it has one).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, problems: Sequence[str] | str | Callable[[Problem], bool] | None = None, *,
                 checker: CheckerVersion | str | None = None, max_turns: int = 1,
                 shaping: RewardShaping | dict | None = None, backend: str = "auto", prescreen: bool = True,
                 fresh_seeds: bool = False, secret: int | str | None = None, workers: int | None = None,
                 address: str | None = None, judge: Judge | None = None, render_mode: str | None = None,
                 field_dir: str | None = None):
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
                                    fresh_seeds=fresh_seeds, secret=secret, workers=workers, address=address,
                                    field_dir=field_dir)
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
            printed = ("" if judgement.category in ("correct", "source_error", "compile_error", "infra_error")
                       else example_printf(action, self.problem, self.judge.backend))
            self._observation = self._with_feedback(judgement, printed)
        info = judgement.info()
        info["turn"] = self.turn
        return self._observation, float(judgement.reward), terminated, truncated, info

    def _with_feedback(self, j: Judgement, printed: str = "") -> str:
        text = f"\n\n## Feedback on submission {self.turn} of {self.max_turns}\n\n{feedback(j)}"
        if printed:
            text += ("\n\nDevice printf on the public example input (official shape, normal values, seed 0; "
                     f"hidden inputs print nothing here):\n{printed}")
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
