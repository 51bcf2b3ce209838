"""Trainer reward functions, called with the exact argument shapes TRL's GRPOTrainer and verl pass,
on the real judge (real compiles, real Ray workers)."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import uuid

import pytest

import mutagym.envs.trainer as trainer_module
from mutagym.envs.trainer import TrlReward, extract_submission, score, trl_reward, verl_compute_score
from mutagym.substrates.catalog import load_problem

CHECKER = "kernelbench"
RELU = load_problem("relu").kernel_sources()["substrate"]
GARBAGE = "I would write a kernel here, but no."
VERL_KEYS = {"score", "accepted", "category", "outcome", "infra_error", "prescreened", "false_accept",
             "false_reject", "checker", "problem"}


def fenced(source: str, lang: str = "cuda") -> str:
    """`source` in a fenced block between prose, as a model writes it (`source` ends with a newline)."""
    return f"Here is my kernel.\n\n```{lang}\n{source}```\n\nIt handles the tail.\n"


def unique(source: str) -> str:
    """The same kernel with a fresh comment, so the compile cache cannot answer for it."""
    return f"{source}\n// {uuid.uuid4()}\n"


def trl_call(reward, completions, problems, conversational=False):
    """Call `reward` as GRPOTrainer._calculate_rewards does (trl 1.13), collecting what it logs."""
    logged = {"extra": {}, "metrics": {}}
    prompt = "Write the kernel."
    prompts = [[{"role": "user", "content": prompt}] if conversational else prompt for _ in completions]
    if conversational:
        completions = [[{"role": "assistant", "content": c}] for c in completions]
    rewards = reward(prompts=prompts, completions=completions, completion_ids=[[1, 2, 3] for _ in completions],
                     problem=list(problems), data_source=["mutagym"] * len(problems),
                     reward_model=[{"style": "rule", "ground_truth": p} for p in problems],
                     extra_info=[{"index": i, "problem": p} for i, p in enumerate(problems)],
                     trainer_state=None, log_extra=lambda column, values: logged["extra"].update({column: values}),
                     log_metric=lambda name, value: logged["metrics"].update({name: value}))
    return rewards, logged


class TestExtractSubmission:
    def test_docstring_examples(self):
        """The module's doctests pass."""
        result = doctest.testmod(trainer_module)
        assert result.failed == 0 and result.attempted > 0

    def test_plain_completion_with_one_block(self):
        """The body of a ```cuda block is the submission, without the prose around it."""
        assert extract_submission(fenced(RELU)) == RELU

    def test_conversational_takes_the_last_assistant_message(self):
        """Earlier assistant turns and other roles are ignored; content parts are joined."""
        completion = [{"role": "assistant", "content": fenced("old\n")},
                      {"role": "tool", "content": fenced("tool output\n")},
                      {"role": "assistant", "content": [{"type": "text", "text": "```cu\nnew"},
                                                        {"type": "image"}, {"type": "text", "text": "\n```"}]}]
        assert extract_submission(completion) == "new\n"

    def test_last_labelled_block_wins_over_later_other_blocks(self):
        """Among several blocks the last cuda/c++ one counts, even before a python or unlabelled one."""
        text = (fenced("first\n", "cuda") + fenced("second\n", "C++") + fenced("print()\n", "python")
                + fenced("plain\n", ""))
        assert extract_submission(text) == "second\n"

    @pytest.mark.parametrize("lang", ["cuda", "cu", "c++", "cpp", "c", "CUDA", "cuda title=k.cu"])
    def test_every_cuda_label(self, lang):
        assert extract_submission(fenced("K\n", "python") + fenced("K2\n", lang)) == "K2\n"

    def test_unlabelled_block_when_none_is_labelled(self):
        assert extract_submission(fenced("print()\n", "python") + fenced("A\n", "") + fenced("B\n", "")) == "B\n"

    def test_no_fence_is_the_whole_text(self):
        assert extract_submission(RELU) == RELU

    def test_unclosed_last_fence_runs_to_the_end(self):
        """A completion cut off at the length limit still yields its (truncated) kernel."""
        assert extract_submission("Sure.\n```cuda\n/* mutagym\n[[launch]]\n") == "/* mutagym\n[[launch]]\n"

    def test_conversational_without_an_assistant_message_is_an_error(self):
        with pytest.raises(ValueError, match=r"needs an assistant message; got roles \['user'\]"):
            extract_submission([{"role": "user", "content": "hi"}])


@pytest.fixture(scope="module")
def reward():
    """The one Ray-backed reward of this module, prescreening as by default. (A second judge with
    workers in the same process would find the cluster's CPUs held by the first one's actors.)"""
    r = trl_reward(CHECKER, workers=2, num_cpus=2)
    yield r
    r.close()


class TestTrlReward:
    def test_grpo_call_plain_and_conversational(self, reward):
        """A correct kernel earns the full reward in either completion format, prose earns the
        source-error reward, and the category and the batch's rates are logged."""
        for conversational in (False, True):
            rewards, logged = trl_call(reward, [fenced(RELU), GARBAGE, RELU], ["relu", "relu", "relu"],
                                       conversational)
            assert rewards == [1.0, 0.0, 1.0], conversational
            assert logged["extra"] == {"mutagym_category": ["correct", "source_error", "correct"]}
            assert logged["metrics"] == {"mutagym/infra_error": 0.0, "mutagym/false_accept": 0.0,
                                         "mutagym/false_reject": 0.0}

    def test_false_accept_is_logged_and_counted(self, reward):
        """ReLU without its max passes kernelbench's inputs in [0, 1) but fails the pool of record:
        full reward, logged as a false accept, and its reward counted as leaked."""
        identity = RELU.replace("fmaxf(v, 0.0f)", "v")
        assert identity != RELU
        before = dict(reward.leakage.as_dict().get(reward.judge.checker_id, {}))
        rewards, logged = trl_call(reward, [fenced(RELU), fenced(identity)], ["relu", "relu"])
        assert rewards == [1.0, 1.0]
        assert logged["metrics"]["mutagym/false_accept"] == 0.5
        after = reward.leakage.as_dict()[reward.judge.checker_id]
        assert after["false_accepts"] == before.get("false_accepts", 0) + 1
        assert after["leaked_reward"] == before.get("leaked_reward", 0.0) + 1.0

    def test_wrong_problem_is_wrong(self, reward):
        """The problem id comes from the column: ReLU submitted for sigmoid is judged wrong."""
        rewards, logged = trl_call(reward, [fenced(RELU)], ["sigmoid"])
        assert rewards == [0.0] and logged["extra"]["mutagym_category"] == ["wrong"]

    def test_name_and_leakage_ledger(self, reward):
        """TRL logs under `__name__`; `.leakage` is the judge's ledger, counting every judged kernel."""
        assert reward.__name__ == f"mutagym_{reward.judge.checker_id}"
        assert reward.__name__.startswith("mutagym_kernelbench-")
        before = reward.leakage.as_dict().get(reward.judge.checker_id, {}).get("judged", 0)
        trl_call(reward, [RELU, GARBAGE], ["relu", "relu"])
        assert reward.leakage.as_dict()[reward.judge.checker_id]["judged"] == before + 2

    def test_missing_problem_column_names_it(self, reward):
        with pytest.raises(KeyError, match=r"dataset column 'task'.*got columns \['completion_ids'"):
            trl_call(TrlReward(reward.judge, problem_column="task"), [RELU], ["relu"])

    def test_shaping_sets_the_category_rewards(self):
        """*shaping* reaches the judge. (Source errors are judged before any worker is asked, so
        this second judge starts no Ray pool.)"""
        from mutagym.envs.judge import RewardShaping
        shaped = trl_reward(CHECKER, prescreen=False, shaping=RewardShaping(source_error=-1.0))
        try:
            assert trl_call(shaped, [GARBAGE, GARBAGE], ["relu", "softmax"])[0] == [-1.0, -1.0]
        finally:
            shaped.close()

    def test_infrastructure_failure_is_none(self, tmp_path):
        """Without a C++ compiler the emulator cannot build the kernel: that sample's reward is
        None (TRL leaves it out), while a source error in the same batch is still judged. Run in
        a fresh process so its Ray workers start without g++ on their PATH."""
        script = (
            "import json, sys\n"
            "from mutagym.envs.trainer import trl_reward\n"
            f"reward = trl_reward({CHECKER!r}, prescreen=False, workers=1, num_cpus=1)\n"
            "out = reward(prompts=['p', 'p'], completions=sys.argv[1:3], completion_ids=[[1], [1]],\n"
            "             problem=['relu', 'relu'], trainer_state=None)\n"
            "print(json.dumps(out))\n"
            "reward.close()\n")
        env = {**os.environ, "PATH": str(tmp_path)}
        env.pop("CXX", None)
        proc = subprocess.run([sys.executable, "-c", script, fenced(unique(RELU)), GARBAGE], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [None, 0.0]


class TestVerlComputeScore:
    """verl's reward managers call `compute_score(data_source=, solution_str=, ground_truth=,
    extra_info=, **reward_kwargs)`; the reward loop adds `num_turns` and `rollout_reward_scores`
    to extra_info."""

    @staticmethod
    def call(solution_str, ground_truth="relu", extra_info=None):
        extra_info = extra_info if extra_info is not None else {
            "index": 0, "problem": ground_truth, "num_turns": None, "rollout_reward_scores": {}}
        return verl_compute_score(data_source="mutagym", solution_str=solution_str, ground_truth=ground_truth,
                                  extra_info=extra_info, checker=CHECKER, prescreen=False)

    def test_correct_kernel_scores_one_and_every_sample_has_the_same_keys(self):
        results = [self.call(fenced(RELU)), self.call(GARBAGE), self.call(fenced(RELU), ground_truth="sigmoid")]
        assert [r["score"] for r in results] == [1.0, 0.0, 0.0]
        assert [r["category"] for r in results] == ["correct", "source_error", "wrong"]
        for r in results:
            assert set(r) == VERL_KEYS
            assert all(isinstance(v, (bool, int, float, str)) for v in r.values()), r
            assert r["checker"].startswith("kernelbench") and not r["prescreened"]

    def test_concurrent_calls_as_the_reward_loop_makes_them(self):
        """verl's reward loop runs compute_score in a thread pool (`loop.run_in_executor`)."""
        from concurrent.futures import ThreadPoolExecutor
        solutions = [fenced(RELU), GARBAGE, fenced(RELU), fenced(RELU)] * 2
        truths = ["relu", "relu", "sigmoid", "relu"] * 2
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda st: self.call(*st), zip(solutions, truths)))
        assert [r["category"] for r in results] == ["correct", "source_error", "wrong", "correct"] * 2

    def test_problem_from_extra_info(self):
        """Without a ground truth the problem id comes from extra_info['problem']."""
        assert self.call(fenced(RELU), ground_truth=None, extra_info={"problem": "relu"})["score"] == 1.0

    def test_no_problem_id_is_an_error(self):
        with pytest.raises(ValueError, match=r"no problem id: ground_truth is None"):
            self.call(fenced(RELU), ground_truth=None, extra_info={"index": 3})

    def test_unknown_verl_kwargs_are_ignored(self):
        """verl's reward loop may pass reward-model addresses and tokenizers."""
        r = verl_compute_score("mutagym", fenced(RELU), "relu", None, checker=CHECKER, prescreen=False,
                               reward_router_address=None, reward_model_tokenizer=None)
        assert r["score"] == 1.0

    def test_infrastructure_failure_scores_zero_and_says_so(self, monkeypatch, tmp_path):
        """verl cannot skip a sample: without a compiler the score is 0.0 and infra_error is True,
        with the same keys as any other sample."""
        monkeypatch.setenv("PATH", str(tmp_path))
        monkeypatch.delenv("CXX", raising=False)
        r = self.call(fenced(unique(RELU)))
        assert set(r) == VERL_KEYS
        assert (r["score"], r["infra_error"], r["category"]) == (0.0, True, "infra_error")

    def test_loaded_by_path_as_verl_does(self):
        """verl's `get_custom_reward_fn` imports `custom_reward_function.path` as a top-level module
        and wraps the function with `reward_kwargs`, which win over call-time kwargs."""
        import functools
        import importlib.util
        spec = importlib.util.spec_from_file_location("custom_module", trainer_module.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = functools.partial(lambda raw, extra, *a, **kw: raw(*a, **{**kw, **extra}),
                               module.verl_compute_score, {"checker": CHECKER, "prescreen": False})
        r = fn(data_source="mutagym", solution_str=fenced(RELU), ground_truth="relu", extra_info={"index": 0})
        assert (r["score"], r["category"]) == (1.0, "correct")

    def test_batch_manager_call_judges_in_parallel(self):
        """verl's batch reward manager passes numpy object arrays from `non_tensor_batch` and
        expects one record per sample. It runs in a fresh process: this judge starts Ray workers,
        which must not compete with this module's reward for the cluster's CPUs."""
        script = (
            "import json, sys\n"
            "import numpy as np\n"
            "from mutagym.envs.trainer import verl_compute_score_batch\n"
            "sols, truths = sys.argv[1:4], ['relu', 'relu', 'sigmoid']\n"
            "extras = np.array([{'index': i, 'problem': t} for i, t in enumerate(truths)], dtype=object)\n"
            "out = verl_compute_score_batch(data_sources=np.array(['mutagym'] * 3, dtype=object),\n"
            "    solution_strs=sols, ground_truths=truths, extra_infos=extras,\n"
            f"    checker={CHECKER!r}, prescreen=False, workers=2)\n"
            "print(json.dumps(out))\n")
        proc = subprocess.run([sys.executable, "-c", script, fenced(RELU), GARBAGE, fenced(RELU)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results = json.loads(proc.stdout.strip().splitlines()[-1])
        assert [(r["score"], r["category"]) for r in results] == [(1.0, "correct"), (0.0, "source_error"),
                                                                  (0.0, "wrong")]
        assert all(set(r) == VERL_KEYS for r in results)

    def test_options_from_the_environment(self, monkeypatch):
        """Without reward_kwargs, the MUTAGYM_* variables choose the judge, read with their types."""
        monkeypatch.setenv("MUTAGYM_CHECKER", CHECKER)
        monkeypatch.setenv("MUTAGYM_PRESCREEN", "false")
        monkeypatch.setenv("MUTAGYM_WORKERS", "1")
        r = verl_compute_score("mutagym", GARBAGE, "relu")
        assert r["checker"].startswith("kernelbench") and r["category"] == "source_error"
        assert not r["prescreened"]  # (and the judge took MUTAGYM_WORKERS as a number: a text fails)


def test_score_one_kernel():
    """`score` judges a bare submission once; the correct ReLU substrate earns the full reward."""
    j = score(RELU, "relu", CHECKER, prescreen=False)
    assert (j.reward, j.accepted, j.category, j.infra_error) == (1.0, True, "correct", False)


def tiny_chat_tokenizer(texts):
    """A word-level tokenizer trained here on `texts`, with a two-role chat template (no downloads)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(
        special_tokens=["<pad>", "<unk>", "<eos>", "<|user|>", "<|assistant|>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>",
                                        eos_token="<eos>")
    tokenizer.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                               "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    return tokenizer


@pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")
def test_real_grpo_step(tmp_path):
    """One real GRPOTrainer step: a tiny random Llama writes completions for prompts from `mutagym
    dataset` (chat format) and `trl_reward` scores them; the trainer logs the reward under the
    callable's name and the infrastructure rate it reported, and the judge counted every completion."""
    import pyarrow.parquet as pq
    import torch
    from datasets import Dataset
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from mutagym.envs.dataset import prompt_rows, write_dataset

    rows = pq.read_table(write_dataset(prompt_rows(["relu", "softmax"]), tmp_path / "data")["parquet"]).to_pylist()
    tokenizer = tiny_chat_tokenizer([r["prompt"][0]["content"] for r in rows])
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None))
    reward = trl_reward(CHECKER, prescreen=False)
    args = GRPOConfig(output_dir=str(tmp_path / "run"), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_steps=1, logging_steps=1, report_to="none", use_cpu=True,
                      save_strategy="no", seed=0, disable_tqdm=True)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=tokenizer)
    try:
        trainer.train()
    finally:
        reward.close()
    logs = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    assert logs[f"rewards/{reward.__name__}/mean"] == 0.0  # a random model writes no valid kernel
    assert logs["mutagym/infra_error"] == 0.0
    assert reward.leakage.as_dict()[reward.judge.checker_id]["judged"] == 2
