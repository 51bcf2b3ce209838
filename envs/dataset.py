"""Prompt datasets for trainers: one row per problem, the task text the environment shows.

`mutagym dataset --out DIR` writes `DIR/prompts.parquet` and `DIR/prompts.jsonl`, the same rows
in both, with the columns TRL and verl read without any mapping:

| column | value | read by |
| --- | --- | --- |
| `prompt` | chat: `[{"role": "user", "content": task_prompt(problem, gate)}]` (what the default reward gate judges); text: the task text | TRL, verl |
| `problem` | the problem id | `trl_reward` (its `problem_column`) |
| `data_source` | `"mutagym"` | verl (`reward_fn_key`) |
| `reward_model` | `{"style": "rule", "ground_truth": problem}` | verl -> `verl_compute_score` |
| `extra_info` | `{"index": i, "problem": problem}` | verl -> `verl_compute_score` |

Chat is the default: verl's dataset applies the model's chat template and needs messages, and
TRL treats a message list as conversational (its completions then arrive as messages too). Text
is for base models without a chat template. Problems are chosen as the environment chooses them
(`kernel_task.select_problems`).

>>> row = next(prompt_rows(["relu"]))
>>> row["problem"], row["prompt"][0]["role"], row["reward_model"]
('relu', 'user', {'style': 'rule', 'ground_truth': 'relu'})
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["DATA_SOURCE", "prompt_rows", "write_dataset"]

DATA_SOURCE = "mutagym"


def prompt_rows(problems: Iterable[str], *, chat: bool = True) -> Iterator[dict[str, Any]]:
    """One dataset row per problem id (columns in the module docstring), made lazily."""
    from ..substrates.prompt import task_prompt
    from .gate import default_contract
    for index, problem in enumerate(problems):
        text = task_prompt(problem, default_contract(problem))
        yield {"prompt": [{"role": "user", "content": text}] if chat else text,
               "problem": problem, "data_source": DATA_SOURCE,
               "reward_model": {"style": "rule", "ground_truth": problem},
               "extra_info": {"index": index, "problem": problem}}


def write_dataset(rows: Iterable[dict[str, Any]], out: str | Path) -> dict[str, Path]:
    """Write *rows* to `out/prompts.parquet` and `out/prompts.jsonl`; `{"parquet": path, "jsonl": path}`."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = list(rows)
    if not rows:
        raise ValueError("no rows to write: the problem selection is empty")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": out / "prompts.parquet", "jsonl": out / "prompts.jsonl"}
    pq.write_table(pa.Table.from_pylist(rows), paths["parquet"])
    paths["jsonl"].write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return paths
