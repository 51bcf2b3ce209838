"""Prompt datasets for trainers: rows, files, and the `mutagym dataset` command."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import mutagym.envs.dataset as dataset_module
from mutagym.envs.dataset import prompt_rows, write_dataset
from mutagym.envs.gate import default_contract
from mutagym.substrates.prompt import task_prompt

COLUMNS = ["prompt", "problem", "data_source", "reward_model", "extra_info"]


def test_docstring_examples():
    result = doctest.testmod(dataset_module)
    assert result.failed == 0 and result.attempted > 0


class TestPromptRows:
    def test_chat_rows_carry_the_task_prompt_and_verl_fields(self):
        rows = list(prompt_rows(["relu", "layernorm"]))
        assert [list(r) for r in rows] == [COLUMNS, COLUMNS]
        assert rows[1]["prompt"] == [{"role": "user", "content": task_prompt("layernorm", default_contract("layernorm"))}]
        assert rows[1]["problem"] == "layernorm" and rows[1]["data_source"] == "mutagym"
        assert rows[1]["reward_model"] == {"style": "rule", "ground_truth": "layernorm"}
        assert rows[1]["extra_info"] == {"index": 1, "problem": "layernorm"}

    def test_text_rows(self):
        [row] = prompt_rows(["relu"], chat=False)
        assert row["prompt"] == task_prompt("relu", default_contract("relu"))

    def test_writing_no_rows_is_an_error(self, tmp_path):
        with pytest.raises(ValueError, match="no rows to write"):
            write_dataset([], tmp_path)


def mutagym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True, timeout=300)


class TestDatasetCommand:
    def test_writes_parquet_and_jsonl_with_the_same_rows(self, tmp_path):
        proc = mutagym("dataset", "--out", str(tmp_path), "--problems", "relu,softmax*,log_softmax")
        assert proc.returncode == 0, proc.stderr
        assert "mutagym dataset: 5 prompts (chat format)" in proc.stdout and "log_softmax" in proc.stdout
        assert f"wrote {tmp_path / 'prompts.parquet'} and {tmp_path / 'prompts.jsonl'}" in proc.stdout
        table = pq.read_table(tmp_path / "prompts.parquet")
        assert table.column_names == COLUMNS
        rows = table.to_pylist()
        assert [r["problem"] for r in rows] == ["log_softmax", "relu", "softmax", "softmax_bf16", "softmax_warp_shuffle"]
        assert rows == [json.loads(line) for line in (tmp_path / "prompts.jsonl").read_text().splitlines()]
        assert rows == list(prompt_rows(["log_softmax", "relu", "softmax", "softmax_bf16", "softmax_warp_shuffle"]))

    def test_text_format_and_json_summary(self, tmp_path):
        proc = mutagym("dataset", "--out", str(tmp_path), "--problems", "tanh", "--format", "text", "--json")
        assert proc.returncode == 0, proc.stderr
        summary = json.loads(proc.stdout)
        assert summary == {"rows": 1, "problems": ["tanh"], "format": "text",
                           "parquet": str(tmp_path / "prompts.parquet"), "jsonl": str(tmp_path / "prompts.jsonl")}
        assert pq.read_table(summary["parquet"]).column("prompt").to_pylist() == [task_prompt("tanh", default_contract("tanh"))]

    def test_bad_selection_exits_2_and_writes_nothing(self, tmp_path):
        proc = mutagym("dataset", "--out", str(tmp_path / "out"), "--problems", "relu,nope*")
        assert proc.returncode == 2
        assert "mutagym dataset: error: --problems 'nope*' matches no problem of the catalog" in proc.stderr
        assert not (tmp_path / "out").exists()

    def test_trainers_load_both_files(self, tmp_path):
        """Hugging Face `datasets` (what TRL and verl load with) reads both files to the same rows."""
        from datasets import load_dataset
        paths = write_dataset(prompt_rows(["relu", "softmax"]), tmp_path)
        parquet = load_dataset("parquet", data_files=str(paths["parquet"]), split="train",
                               cache_dir=str(tmp_path / "cache"))
        jsonl = load_dataset("json", data_files=str(paths["jsonl"]), split="train", cache_dir=str(tmp_path / "cache"))
        assert parquet.column_names == jsonl.column_names == COLUMNS
        assert parquet.to_list() == jsonl.to_list() == list(prompt_rows(["relu", "softmax"]))
