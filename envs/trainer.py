"""Reward functions for RL trainers (TRL, verl), on top of the environment's judging service.

A trainer hands over a model's raw completion; these functions cut the submission out of it
(`extract_submission`) and ask `mutagym.envs.judge.Judge` for the verdict, so a trainer gets the
same reward, outcome categories, prescreen flags and leakage ledger as `KernelTaskEnv.step`.
These adapters sit above the judging service (docs/architecture.md); `Judge` is imported inside
the functions, absolutely, and nothing else of mutagym is imported, so verl can load this file by
path as a top-level module.

| trainer | entry point | infrastructure failure |
| --- | --- | --- |
| TRL `GRPOTrainer(reward_funcs=...)` | `trl_reward(checker)` | `None` (TRL skips it) |
| verl (`custom_reward_function`) | `verl_compute_score`, `verl_compute_score_batch` | `score` 0.0, `infra_error` |
| anything else | `score(source, problem)` | the `Judgement` says `infra_error` |
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["TrlReward", "extract_submission", "score", "trl_reward", "verl_compute_score",
           "verl_compute_score_batch"]

#: Info strings of a fenced block that holds a submission (the first word, case-insensitive).
CUDA_FENCES = frozenset({"cuda", "cu", "c++", "cpp", "c"})

# A CommonMark fenced block: a ``` or ~~~ line (at most 3 spaces of indent) with an info string,
# the body, and a closing fence of the same characters; an unclosed last fence (a completion cut
# off at the length limit) runs to the end of the text, as in CommonMark.
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)\n(?P<body>.*?)"
                    r"(?:^ {0,3}(?P=fence)[ \t]*$|\Z)", re.M | re.S)


def _completion_text(completion: str | Sequence[dict[str, Any]]) -> str:
    """The text of a plain completion, or of the last assistant message of a conversational one."""
    if isinstance(completion, str):
        return completion
    replies = [m for m in completion if m.get("role") == "assistant"]
    if not replies:
        raise ValueError(f"a conversational completion needs an assistant message; got roles "
                         f"{[m.get('role') for m in completion]!r}")
    content = replies[-1].get("content") or ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


def extract_submission(completion: str | Sequence[dict[str, Any]]) -> str:
    """The submission in a model's completion: the last fenced cuda/cu/c++/cpp/c block.

    Without a labelled block the last unlabelled one counts; without any fence, the whole text.

    >>> extract_submission("Here:\\n```python\\nprint()\\n```\\n```cuda\\nA\\n```\\n```cpp\\nB\\n```\\n")
    'B\\n'
    >>> extract_submission([{"role": "user", "content": "?"},
    ...                     {"role": "assistant", "content": [{"type": "text", "text": "```\\nK\\n```"}]}])
    'K\\n'
    >>> extract_submission("/* mutagym ... */ kernel")
    '/* mutagym ... */ kernel'
    """
    text = _completion_text(completion)
    blocks = [(m["info"].split()[0].lower() if m["info"].strip() else "", m["body"])
              for m in _FENCE.finditer(text)]
    for wanted in (lambda lang: lang in CUDA_FENCES, lambda lang: lang == ""):
        bodies = [body for lang, body in blocks if wanted(lang)]
        if bodies:
            return bodies[-1]
    return text


def _judge(checker, **options):
    # Absolute: verl imports this file by path as a top-level module, where `..envs` means nothing.
    from mutagym.envs.judge import Judge
    return Judge(checker, **options)


def score(source: str, problem: str, checker=None, **options):
    """Judge one kernel `source` (a submission, not a completion) for `problem`; a `Judgement`.

    *options* are `Judge`'s (prescreen, backend, shaping, fresh_seeds, workers, address). It starts
    and closes a judge per call: for many kernels use `trl_reward` or `Judge.judge_many`.
    """
    judge = _judge(checker, **options)
    try:
        return judge.judge(source, problem)
    finally:
        judge.close()


# ---------------------------------------------------------------------------------- TRL
class TrlReward:
    """A TRL `GRPOTrainer` reward function over one `Judge` (made by `trl_reward`).

    GRPOTrainer calls it as `reward(prompts=..., completions=..., completion_ids=..., **columns)`,
    where `columns` holds every dataset column except `prompt` (one value per completion) plus
    `trainer_state`, `log_extra` and `log_metric`. The whole batch is judged in parallel with
    `Judge.judge_many`. It returns one reward per completion, `None` where the environment failed
    (TRL then leaves the sample out of the group baseline). Each batch logs the outcome category
    per completion (`log_extra`) and the rates of infrastructure errors, false accepts and false
    rejects (`log_metric`, under `mutagym/`).
    """

    def __init__(self, judge, problem_column: str = "problem"):
        self.judge = judge
        self.problem_column = problem_column
        self.__name__ = f"mutagym_{judge.checker_id}"  # TRL logs rewards/<__name__>/mean

    @property
    def leakage(self):
        """The judge's running ledger per checker version (`.as_dict()`)."""
        return self.judge.leakage

    def __call__(self, prompts, completions, **columns) -> list[float | None]:
        if self.problem_column not in columns:
            raise KeyError(f"the reward needs the dataset column {self.problem_column!r} (the problem id of "
                           f"each prompt); got columns {sorted(columns)!r}")
        problems = columns[self.problem_column]
        judgements = self.judge.judge_many(
            [(extract_submission(c), p) for c, p in zip(completions, problems, strict=True)])
        if columns.get("log_extra"):
            columns["log_extra"]("mutagym_category", [j.category for j in judgements])
        if columns.get("log_metric") and judgements:
            for name, value in _batch_rates(judgements).items():
                columns["log_metric"](f"mutagym/{name}", value)
        return [None if j.infra_error else j.reward for j in judgements]

    def close(self) -> None:
        self.judge.close()


def _batch_rates(judgements) -> dict[str, float]:
    """Infrastructure-error rate of a batch, and the plain checker's false accept/reject rates
    against the strongest check that ran (the gate, or the prescreen's pool of record)."""
    rates = {"infra_error": sum(j.infra_error for j in judgements) / len(judgements)}
    audited = [a for a in (j.checker_alone() for j in judgements) if a is not None]
    if audited:
        rates["false_accept"] = sum(fa for fa, _ in audited) / len(audited)
        rates["false_reject"] = sum(fr for _, fr in audited) / len(audited)
    return rates


def trl_reward(checker=None, *, problem_column: str = "problem", shaping=None, prescreen: bool = True,
               **judge_options) -> TrlReward:
    """A reward function for TRL's `GRPOTrainer(reward_funcs=trl_reward(...))`.

    *checker* is `Judge`'s (None: the reward gate; a preset name, a file or a `CheckerVersion`
    judges with that checker alone); *problem_column* names the dataset column with each prompt's problem id
    (`mutagym dataset` writes it); *shaping* a `RewardShaping` (None: the judge's default).
    Plain and conversational completions both work. `.leakage` is the judge's ledger; call
    `.close()` to release the Ray pool.
    """
    if shaping is not None:
        judge_options["shaping"] = shaping
    return TrlReward(_judge(checker, prescreen=prescreen, **judge_options), problem_column)


# ---------------------------------------------------------------------------------- verl
def _flag(text: str) -> bool:
    return text.strip().lower() not in ("0", "false", "no", "off", "")


#: Judge options verl can set through `custom_reward_function.reward_kwargs`, else through these
#: environment variables (read with the given type). Inside verl's own Ray cluster, set `workers`:
#: by default the judge starts one actor per CPU of the cluster it finds (actors reserve no CPU).
VERL_OPTIONS = {"checker": ("MUTAGYM_CHECKER", str), "prescreen": ("MUTAGYM_PRESCREEN", _flag),
                "backend": ("MUTAGYM_BACKEND", str), "workers": ("MUTAGYM_WORKERS", int),
                "field_dir": ("MUTAGYM_FIELD_DIR", str)}
_verl_judges: dict[tuple, Any] = {}
_verl_lock = threading.Lock()


def _verl_judge(kwargs: dict[str, Any]):
    """The process's judge for these options, made on first use; call it holding `_verl_lock`."""
    options = {}
    for name, (variable, parse) in VERL_OPTIONS.items():
        if name in kwargs:
            options[name] = kwargs[name]
        elif variable in os.environ:
            options[name] = parse(os.environ[variable])
    key = tuple(sorted(options.items()))
    if key not in _verl_judges:
        _verl_judges[key] = _judge(options.pop("checker", None), **options)
    return _verl_judges[key]


def verl_compute_score(data_source, solution_str: str, ground_truth, extra_info=None, **kwargs) -> dict:
    """verl's custom reward function: `custom_reward_function.path=<this file>` (`python -c "import
    mutagym.envs.trainer as m; print(m.__file__)"`), `custom_reward_function.name=verl_compute_score`.

    verl's reward managers call `compute_score(data_source=, solution_str=, ground_truth=,
    extra_info=, **more)` once per response, from the decoded response text, the row's
    `reward_model.ground_truth` and `extra_info` (as `mutagym dataset` writes them), possibly from
    several threads at once; `more` holds `custom_reward_function.reward_kwargs` and whatever a
    verl version adds (reward-model addresses, tokenizers), which is ignored. The problem id is the
    ground truth, else `extra_info["problem"]`; `data_source` is not used. The judge is made once
    per process from `checker`, `prescreen`, `backend`, `workers`, `field_dir` in reward_kwargs, else
    from `MUTAGYM_CHECKER`, `MUTAGYM_PRESCREEN`, `MUTAGYM_BACKEND`, `MUTAGYM_WORKERS`,
    `MUTAGYM_FIELD_DIR` (`VERL_OPTIONS`).

    verl takes `score` as the reward and collects every other key into per-sample metric lists,
    so every sample returns the same keys, numbers or strings only (never None). verl has no way
    to skip a sample: an infrastructure failure scores 0.0 with `infra_error` True.
    """
    source, problem = extract_submission(solution_str), _verl_problem(ground_truth, extra_info)
    with _verl_lock:  # verl calls from several threads: make the process's judge once
        judge = _verl_judge(kwargs)
    return _verl_record(judge.judge(source, problem))   # a Judge serialises its own calls


def verl_compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs) -> list[dict]:
    """`verl_compute_score` for verl's batch reward manager (`reward_model.reward_manager=batch`),
    which calls `compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=,
    **reward_kwargs)` once per batch: the batch is judged in parallel on the Ray pool."""
    extra_infos = [None] * len(solution_strs) if extra_infos is None else extra_infos
    items = [(extract_submission(s), _verl_problem(g, e))
             for s, g, e in zip(solution_strs, ground_truths, extra_infos, strict=True)]
    with _verl_lock:
        judge = _verl_judge(kwargs)
    return [_verl_record(j) for j in judge.judge_many(items)]


def _verl_problem(ground_truth, extra_info) -> str:
    problem = ground_truth if isinstance(ground_truth, str) and ground_truth else (extra_info or {}).get("problem")
    if not problem:
        raise ValueError(f"no problem id: ground_truth is {ground_truth!r} and extra_info has no 'problem' "
                         f"({extra_info!r:.200})")
    return problem


def _verl_record(j) -> dict:
    """The same keys for every judgement, each a number or a string."""
    audit = j.checker_alone()
    return {"score": 0.0 if j.infra_error else float(j.reward), "accepted": bool(j.accepted),
            "category": j.category, "outcome": j.outcome, "infra_error": bool(j.infra_error),
            "prescreened": audit is not None, "false_accept": audit is not None and bool(audit[0]),
            "false_reject": audit is not None and bool(audit[1]), "checker": j.checker,
            "problem": j.problem}
