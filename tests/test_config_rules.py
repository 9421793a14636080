"""The configs' rules for numbers, and the inputs the trainers accept.

A teaching kit's main input is a bad config: each setting of the wrong
type or range is refused by name, with the fix, before any training.
"""

import math
import warnings

import numpy as np
import pandas
import pytest
import torch
from datasets import Dataset, DatasetDict

from kit import tasks
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer, GRPOConfig, GRPOTrainer
from kit.trainers.guards import score


def grpo_config(tmp_path, **overrides):
    settings = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                    per_device_train_batch_size=8, num_generations=4,
                    max_completion_length=4, save_strategy="no")
    return GRPOConfig(str(tmp_path), **{**settings, **overrides})


def dpo_config(tmp_path, **overrides):
    settings = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                    per_device_train_batch_size=8)
    return DPOConfig(str(tmp_path), **{**settings, **overrides})


# ------------------------------------------------------------- config rules

@pytest.mark.parametrize("overrides, message", [
    (dict(num_generations="4"), r"GRPOConfig.num_generations must be a "
     r"whole number >= 2, got '4' \(str: write it without quotes\)"),
    (dict(num_generations=True), r"num_generations must be a whole number "
     r">= 2, got True \(bool\)"),
    (dict(max_completion_length=None), r"max_completion_length must be a "
     r"whole number >= 1, got None \(NoneType\): try 8"),
    (dict(max_prompt_length=None), "max_prompt_length must be a whole"),
    (dict(steps_per_generation=2.5), r"steps_per_generation must be a whole "
     r"number >= 1, got 2.5 \(float\)"),
    (dict(per_device_train_batch_size=0), r"GRPOConfig.per_device_train_"
     r"batch_size must be a whole number >= 1, got 0: try 8"),
    (dict(per_device_train_batch_size=-8), "per_device_train_batch_size must "
     "be a whole number >= 1, got -8"),
    (dict(gradient_accumulation_steps=0), "GRPOConfig.gradient_accumulation_"
     "steps must be a whole number >= 1, got 0"),
    (dict(beta=math.inf), "GRPOConfig.beta must be a finite number >= 0, got "
     "inf: 0 turns the KL off"),
    (dict(beta=math.nan), "beta must be a finite number >= 0, got nan"),
    (dict(temperature=math.inf), "GRPOConfig.temperature must be a finite "
     "number > 0, got inf"),
    (dict(temperature="1.0"), "temperature must be a finite number > 0, got "
     "'1.0' \\(str"),
    (dict(epsilon=10**400), r"epsilon must be a finite number > 0, got "
     r"1000.*\(401 characters\)"),
])
def test_grpo_settings_of_the_wrong_type_or_range_are_named(
        overrides, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        grpo_config(tmp_path, **overrides)


@pytest.mark.parametrize("overrides, message", [
    (dict(beta="0.1"), r"DPOConfig.beta must be a finite number > 0, got "
     r"'0.1' \(str: write it without quotes\): try 0.1"),
    (dict(max_length=None), r"DPOConfig.max_length must be a whole number "
     r">= 2, got None \(NoneType\)"),
    (dict(max_length=64.0), r"max_length must be a whole number >= 2, got "
     r"64.0 \(float\)"),
    (dict(gradient_accumulation_steps=0), "DPOConfig.gradient_accumulation_"
     "steps must be a whole number >= 1, got 0: 1 means no accumulation"),
    (dict(per_device_train_batch_size=-8), "DPOConfig.per_device_train_batch"
     "_size must be a whole number >= 1, got -8"),
])
def test_dpo_settings_of_the_wrong_type_or_range_are_named(
        overrides, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        dpo_config(tmp_path, **overrides)


# Settings a float64 holds but float32, where the losses are computed, does
# not: before, each trained with weights that never moved, or logged nan
@pytest.mark.parametrize("make, overrides, message", [
    ("dpo", dict(loss_type="sigmoid_norm", beta=1e-300),
     r"DPOConfig.beta is 1e-300, which is 0.0 in float32 \(the dtype the "
     r"loss is computed in\): try 0.1"),
    ("dpo", dict(beta=1e-50), r"DPOConfig.beta is 1e-50, which is 0.0 in"),
    ("dpo", dict(loss_type="hinge", beta=1e-50), r"beta is 1e-50, which is "
     r"0.0 in float32"),
    ("dpo", dict(loss_type="ipo", beta=1e300), r"DPOConfig.beta is 1e\+300, "
     r"which is inf in float32"),
    ("dpo", dict(loss_type="ipo", beta=1e-39), r"DPOConfig.beta is 1e-39: "
     r"with loss_type='ipo' the target margin 1/\(2·beta\) is inf in "
     r"float32, and the loss nan; try 0.1"),
    ("dpo", dict(loss_type=["sigmoid"]), r"DPOConfig.loss_type must be one "
     r"of 'sigmoid', 'ipo', 'hinge', 'sigmoid_norm', 'robust', 'exo_pair', "
     r"'nca_pair', 'bco_pair', 'sppo_hard', 'apo_zero', 'apo_down', "
     r"'discopop', got "
     r"\['sigmoid'\]"),
    ("grpo", dict(temperature=1e-30), r"GRPOConfig.temperature is 1e-30: in "
     r"float32 a token one logit below the best then gets probability "
     r"exp\(-1/1e-30\) = 0, .* every advantage 0 .*; use 0.01 or more"),
    ("grpo", dict(temperature=0.009), r"temperature is 0.009: in float32"),
    ("grpo", dict(beta=1e300), r"GRPOConfig.beta is 1e\+300, which is inf "
     r"in float32 .*: 0 turns the KL off; try 0.04"),
    ("grpo", dict(epsilon=1e-50), r"GRPOConfig.epsilon is 1e-50, which is "
     r"0.0 in float32"),
])
def test_settings_float32_cannot_hold_are_refused(make, overrides, message,
                                                  tmp_path):
    config = dpo_config if make == "dpo" else grpo_config
    with pytest.raises(ValueError, match=message):
        config(tmp_path, **overrides)


@pytest.mark.parametrize("make, overrides", [
    ("dpo", dict(loss_type="ipo", beta=1e-30)),  # 1/(2β) = 5e29: fine
    ("grpo", dict(temperature=0.01)),  # the lowest that still samples
    ("grpo", dict(beta=1e-50)),  # 0 in float32, and 0 turns the KL off
])
def test_the_edges_float32_holds_are_accepted(make, overrides, tmp_path):
    (dpo_config if make == "dpo" else grpo_config)(tmp_path, **overrides)


def test_numpy_integers_are_counts_too(tmp_path):
    args = grpo_config(tmp_path, num_generations=np.int64(4),
                       temperature=np.float32(0.7))
    assert args.num_generations == 4


# ------------------------------------------------------------------ inputs

ROWS = [{"prompt": "01+02=", "answer": "3"}, {"prompt": "02+02=",
                                               "answer": "4"}] * 8
PAIRS = [{"prompt": "01+02=", "chosen": "3", "rejected": "4"},
         {"prompt": "02+02=", "chosen": "4", "rejected": "5"}] * 4


def grpo(tmp_path, data, rewards=(tasks.correctness_reward,)):
    model, tokenizer = load_policy(preset="cpu")
    return GRPOTrainer(model, rewards, args=grpo_config(tmp_path),
                       train_dataset=data, processing_class=tokenizer)


def dpo(tmp_path, data):
    model, tokenizer = load_policy(preset="cpu")
    return DPOTrainer(model, args=dpo_config(tmp_path), train_dataset=data,
                      processing_class=tokenizer)


@pytest.mark.parametrize("convert", [list, pandas.DataFrame],
                         ids=["list of dicts", "DataFrame"])
def test_a_list_of_dicts_or_a_dataframe_is_converted(convert, tmp_path):
    trainer = grpo(tmp_path, convert(ROWS))
    assert isinstance(trainer.train_dataset, Dataset)
    assert trainer.train_dataset[1] == ROWS[1]
    trainer = dpo(tmp_path, convert(PAIRS))
    assert trainer.train_dataset.num_rows == len(PAIRS)


@pytest.mark.parametrize("data, message", [
    (Dataset.from_list(ROWS).to_iterable_dataset(),
     "train_dataset is an IterableDataset \\(streamed\\), which has no "
     "length: load it without streaming=True"),
    (DatasetDict(train=Dataset.from_list(ROWS)),
     r"train_dataset is a DatasetDict of the splits \['train'\]: pass one "
     r"split, e.g. data\['train'\]"),
    ({"prompt": ["01+02="]}, "train_dataset is a dict: give a "
     "datasets.Dataset, a list of dicts"),
    (["01+02="], "train_dataset is a list: give a datasets.Dataset"),
    ([], "train_dataset is empty: GRPO needs prompts"),
])
def test_other_inputs_are_refused_in_one_line(data, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        grpo(tmp_path, data)


def test_a_bad_row_of_a_shuffled_dataset_is_named_as_the_learner_sees_it(
        tmp_path):
    """The checks read whole columns at once (whole_column): through a
    select/shuffle they must still name the row of the dataset given."""
    rows = [{"prompt": "01+02=", "answer": "3"},
            {"prompt": None, "answer": "5"},
            {"prompt": "03+04=", "answer": "7"}]
    picked = Dataset.from_list(rows).select([2, 0, 1])  # None is row 2
    with pytest.raises(ValueError, match="train_dataset row 2: column "
                       "'prompt' holds None"):
        grpo(tmp_path, picked)
    rows[1]["prompt"] = "1 and 2?"  # outside the toy vocabulary
    with pytest.warns(UserWarning, match="e.g. row 2 'prompt' '1 and 2"):
        grpo(tmp_path, Dataset.from_list(rows).select([2, 0, 1]))


# ------------------------------------------------------------------ rewards

def test_no_reward_function_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"GRPOTrainer needs at least one "
                                         r"reward function, got "
                                         r"reward_funcs=\[\]"):
        grpo(tmp_path, ROWS, rewards=[])
    with pytest.raises(ValueError, match=r"reward_funcs\[0\] is 'org/model' "
                                         r"\(str\), not a function"):
        grpo(tmp_path, ROWS, rewards=["org/model"])


def returns(values):
    def reward(prompts, completions, **columns):
        return values
    return reward


@pytest.mark.parametrize("values, message", [
    (torch.ones(2, device="meta"), r"returned a Tensor whose values cannot "
     r"be read \(NotImplementedError: .*\): return a list with one float"),
    ([10**400, 1.0], r"returned 1000.*\(401 characters\) for completion 0 "
     r"\('a'\): rewards must be finite float32 numbers"),
    (np.array([1.0, np.inf]), "returned inf for completion 1 .*: rewards "
     "must be finite"),
    (torch.tensor([float("nan"), 1.0]), "returned nan for completion 0"),
])
def test_any_reward_is_judged_inside_the_reward_wrapper(values, message):
    with pytest.raises(ValueError, match="reward function reward " + message):
        score([returns(values)], ["p"] * 2, ["a", "b"], {})


def test_numpy_and_torch_rewards_are_read():
    for values in (np.array([1, 2]), torch.tensor([0.5, 1.5]),
                   [True, False], [10**10, 1]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = score([returns(values)], ["p"] * 2, ["a", "b"], {})
        assert out[:, 0].tolist() == [float(v) for v in values]


def test_the_guards_refusals_live_in_one_table():
    """One table, kit.i18n's shape: a second language is a table to fill
    (the configs', DPO's pairs, a nan or an inf; resuming has its own,
    kit.trainers.checkpoint.REFUSALS)."""
    import inspect

    from kit import i18n
    from kit.trainers import dpo, grpo_config, guards, nonfinite
    source = "".join(inspect.getsource(module) for module in (
        guards, grpo_config, dpo, nonfinite))
    code = source.split("def refusal", 1)[1]  # after the table
    assert "raise ValueError(" not in code  # every refusal is a key
    unused = [key for key in guards.MESSAGES["en"]
              if f'"{key}"' not in code]
    assert unused == []
    assert i18n.text(guards.MESSAGES, "empty", name="eval_dataset",
                     algorithm="DPO", rows="pairs") == (
        "eval_dataset is empty: DPO needs pairs")


def test_prompts_per_generation_is_one_formula_for_trainer_and_explorer():
    from kit import explore
    from kit.trainers.sampler import prompts_per_generation
    # B·k·processes / G: 8 completions a step, 4 steps, G = 4
    assert prompts_per_generation(8, 4, 4) == 8
    assert prompts_per_generation(8, 4, 4, num_processes=2) == 16
    plan = explore.sampler_plan(8, 4, 4, 1, max_steps=1)
    assert len(set(plan["batches"][0])) == prompts_per_generation(8, 4, 4)


def readme_config_rows():
    """docs/errors.md's rows that start with a DPOConfig(...) or GRPOConfig(...)
    call refused with a ValueError: (call, the message it shows)."""
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "docs" / "errors.md"
              ).read_text(encoding="utf-8")
    table = readme.split("<!-- errors -->")[1].split("<!-- /errors -->")[0]
    rows = []
    for line in table.splitlines():
        found = re.match(r"\| `((?:DPO|GRPO)Config\(.*?\))`.*? \| `(.*?)`",
                         line)
        if found and not found.group(2).startswith("FloatingPointError"):
            rows.append((found.group(1),
                         found.group(2).removeprefix("ValueError: ")))
    return rows


@pytest.mark.parametrize("call, shown", readme_config_rows())
def test_readmes_config_rows_are_the_messages_whole(call, shown):
    """Each row's message, as the call raises it (up to an ellipsis)."""
    with pytest.raises(ValueError) as refused:
        eval(call, {"DPOConfig": DPOConfig, "GRPOConfig": GRPOConfig,
                    "inf": math.inf, "nan": math.nan})
    said = str(refused.value)
    whole = shown.split(" ...")[0].split(" …")[0]
    assert said == whole if whole == shown else said.startswith(whole)


def test_readme_has_a_row_for_each_kind_of_config_refusal():
    assert len(readme_config_rows()) >= 15
