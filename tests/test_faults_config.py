"""Issue 67, round 5: settings and data the trainers took without a word.

A setting the chosen loss does not read, a flag with nothing to act on, a
prompt that asks nothing, a file without GSM8K's columns, a saved buffer
of tokens the model has no embedding for: each is one line that names the
field (or the row, the column, the file) and the fix, before training.
"""

import json
import shutil

import pytest
import torch

from kit import i18n, recipes, tasks
from kit.trainers import GRPOConfig

SETTINGS = dict(report_to="none", use_cpu=True, disable_tqdm=True,
                per_device_train_batch_size=8, num_generations=4,
                max_completion_length=4, save_strategy="no")


def grpo_config(tmp_path, **overrides):
    return GRPOConfig(str(tmp_path), **{**SETTINGS, **overrides})


@pytest.fixture
def ja():
    i18n.set_language("ja")
    yield
    i18n.set_language("en")


# ------------------------------------------------- settings nothing reads

@pytest.mark.parametrize("overrides, said", [
    # before: accepted, and the run was the same as without them
    (dict(sapo_temperature_pos=0.5),
     "GRPOConfig.sapo_temperature_pos=0.5 does nothing with loss_type='grpo': "
     "only ['sapo'] read it. Set loss_type='sapo', or leave "
     "sapo_temperature_pos at its default (1.0)"),
    (dict(loss_type="cispo", sapo_temperature_neg=2.0),
     "GRPOConfig.sapo_temperature_neg=2.0 does nothing with "
     "loss_type='cispo': only ['sapo'] read it. Set loss_type='sapo', or "
     "leave sapo_temperature_neg at its default (1.05)"),
    (dict(use_bias_correction_kl=True),  # beta = 0, the default
     "GRPOConfig.use_bias_correction_kl=True does nothing with beta=0: it "
     "corrects the KL term, and beta=0 leaves that term out. Set beta above "
     "0 (try 0.04), or use_bias_correction_kl=False"),
], ids=["sapo_pos-grpo", "sapo_neg-cispo", "kl_correction-beta0"])
def test_a_setting_with_no_effect_is_refused_by_name(overrides, said,
                                                     tmp_path):
    with pytest.raises(ValueError) as caught:
        grpo_config(tmp_path, **overrides)
    assert str(caught.value) == said


@pytest.mark.parametrize("overrides", [
    dict(loss_type="sapo", sapo_temperature_pos=0.5,
         sapo_temperature_neg=2.0),
    dict(sapo_temperature_pos=1.0, sapo_temperature_neg=1.05),  # defaults
    dict(use_bias_correction_kl=True, beta=0.04),
    dict(use_bias_correction_kl=False, beta=0.0)])
def test_the_same_settings_where_they_act_are_accepted(overrides, tmp_path):
    assert grpo_config(tmp_path, **overrides)


@pytest.mark.parametrize("overrides", [
    dict(sapo_temperature_pos=0.5), dict(use_bias_correction_kl=True)])
def test_a_setting_with_no_effect_is_refused_in_japanese(ja, overrides,
                                                         tmp_path):
    with pytest.raises(ValueError) as caught:
        grpo_config(tmp_path, **overrides)
    assert "使われません" in str(caught.value) or "何もしません" in str(
        caught.value)


# ------------------------------------------------------- empty prompts

@pytest.mark.parametrize("prompt", ["", "  "])
def test_an_empty_prompt_is_refused_with_its_row(prompt, tmp_path, policy):
    # before: trained, the policy generating from <bos> alone
    model, tokenizer = policy
    rows = [{"prompt": "1+2=", "answer": "3"}] * 3 + [
        {"prompt": prompt, "answer": "0"}] * 2
    with pytest.raises(ValueError) as caught:
        recipes.grpo_trainer("cpu", model=model, tokenizer=tokenizer,
                             output_dir=tmp_path, train_dataset=rows,
                             eval_strategy="no", eval_on_start=False)
    assert str(caught.value) == (
        f"train_dataset row 3: the prompt is {prompt!r} (2 such rows): GRPO "
        "answers prompts, and an empty one asks nothing; drop those rows or "
        "give each a prompt")


def test_an_empty_prompt_is_refused_in_japanese(ja):
    from datasets import Dataset
    from kit.trainers.guards import check_no_empty_prompts
    with pytest.raises(ValueError, match="の行 0: プロンプトが '' です"):
        check_no_empty_prompts("train_dataset",
                               Dataset.from_list([{"prompt": ""}]))


# --------------------------------------------- hub_prompt_dataset columns

@pytest.mark.parametrize("rows, missing", [
    ([{"question": "Two plus two?", "solution": "#### 4"}], "answer"),
    ([{"problem": "Two plus two?", "answer": "#### 4"}], "question")])
def test_a_file_without_gsm8ks_columns_names_the_missing_one(rows, missing,
                                                             tmp_path):
    # before: KeyError: 'answer' from inside datasets' filter
    path = tmp_path / "math.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    with pytest.raises(ValueError) as caught:
        tasks.hub_prompt_dataset(str(path))
    has = list(rows[0])
    assert str(caught.value) == (
        f"hub_prompt_dataset: {path} has no column {missing!r} (it has "
        f"{has}): GSM8K's layout is `question`, and `answer` ending in "
        "'#### <number>'; rename its columns to those "
        "(Dataset.rename_column)")


# ----------------------------------- a buffer of ids beyond the vocabulary

def grpo(output_dir):
    return recipes.grpo_trainer(
        "cpu", output_dir=output_dir, max_steps=1, save_strategy="steps",
        save_steps=1, per_device_train_batch_size=8, num_generations=4,
        steps_per_generation=2, eval_strategy="no", eval_on_start=False,
        disable_tqdm=True, train_dataset=tasks.prompt_dataset("train", n=16))


@pytest.mark.parametrize("key, fill", [("completion_ids", 10**6),
                                       ("prompt_ids", -1)])
def test_a_buffer_of_ids_beyond_the_vocabulary_is_refused_on_resume(
        key, fill, tmp_path):
    # before: torch's "IndexError: index out of range in self" mid-step
    grpo(tmp_path / "first").train()
    checkpoint = tmp_path / "checkpoint-1"
    shutil.copytree(tmp_path / "first" / "checkpoint-1", checkpoint)
    path = checkpoint / "grpo_state_0.pt"
    state = torch.load(path, weights_only=True)
    ids = state["buffer"][1][key]
    ids[0, -1] = fill
    torch.save(state, path)
    trainer = grpo(tmp_path / "again")
    size = trainer.model.get_input_embeddings().num_embeddings
    with pytest.raises(ValueError) as caught:
        trainer.train(resume_from_checkpoint=str(checkpoint))
    said = str(caught.value)
    assert said.startswith(
        f"cannot resume from {checkpoint}: grpo_state_0.pt holds a buffer "
        f"whose slice 1 has {key} from {int(ids.min())} to {int(ids.max())}, "
        f"beyond the model's vocabulary (ids 0 to {size - 1}): "), said
    assert "\n" not in said
