"""The online path (a real model, a Hub dataset), exercised on local files."""

import json

import pytest

from kit import models, recipes, tasks


@pytest.fixture
def gsm8k_folder(tmp_path):
    """A local copy in GSM8K's layout: question, answer ending in ####."""
    rows = [{"question": "Tom has 3 apples and buys 4 more. How many?",
             "answer": "3 + 4 = 7\n#### 7"},
            {"question": "What is 1,000 + 234?", "answer": "#### 1,234"},
            {"question": "Half of 10?", "answer": "10 / 2 = 5\n#### 5"}]
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    (folder / "train.jsonl").write_text(
        "\n".join(json.dumps(row) for row in rows))
    return folder


def test_a_gsm8k_style_dataset_maps_to_prompt_and_answer(gsm8k_folder):
    data = tasks.hub_prompt_dataset(str(gsm8k_folder), config=None)
    assert data.column_names == ["prompt", "answer"]
    assert list(data["answer"]) == ["7", "1234", "5"]
    assert data[0]["prompt"].startswith("Tom has 3 apples")


def test_a_local_jsonl_file_works_as_the_docstring_says(gsm8k_folder):
    data = tasks.hub_prompt_dataset(str(gsm8k_folder / "train.jsonl"))
    assert list(data["answer"]) == ["7", "1234", "5"]


def test_a_local_folder_works_with_the_default_config(gsm8k_folder):
    # config="main" names a Hub config; a folder has none and once failed
    data = tasks.hub_prompt_dataset(str(gsm8k_folder))
    assert list(data["answer"]) == ["7", "1234", "5"]


def test_rows_without_a_final_number_are_skipped_and_counted(tmp_path):
    rows = [{"question": "Two plus two?", "answer": "2 + 2 = 4\n#### 4"},
            {"question": "Why?", "answer": "because"},
            {"question": "Which?", "answer": "#### "}]
    path = tmp_path / "gsm8k.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    with pytest.warns(UserWarning, match="skipped 2 of 3 rows"):
        data = tasks.hub_prompt_dataset(str(path))
    assert list(data["answer"]) == ["4"]


def test_a_dataset_with_no_usable_row_is_refused(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"question": "Why?", "answer": "because"}))
    with pytest.warns(UserWarning), pytest.raises(
            ValueError, match="no row .* '#### <number>'"):
        tasks.hub_prompt_dataset(str(path))


def test_an_instruct_tokenizer_gets_chat_formatted_prompts(gsm8k_folder):
    tokenizer = tasks.make_tokenizer()
    tokenizer.chat_template = ("{% for m in messages %}<|{{ m.role }}|>"
                               "{{ m.content }}{% endfor %}"
                               "{% if add_generation_prompt %}<|assistant|>"
                               "{% endif %}")
    data = tasks.hub_prompt_dataset(str(gsm8k_folder), config=None, n=2,
                                    tokenizer=tokenizer)
    assert len(data) == 2
    assert data[0]["prompt"].startswith("<|user|>Tom has 3 apples")
    assert data[0]["prompt"].endswith("<|assistant|>")


def test_final_number_reward_reads_the_last_number():
    completions = ["3 + 4 = 7", "It is 1,234.", "5 or 6", "no idea"]
    assert tasks.final_number_reward(
        [""] * 4, completions, answer=["7", "1234", "5", "1"]) == [
            1.0, 1.0, 0.0, 0.0]


def test_grpo_runs_on_a_locally_saved_model_and_dataset(gsm8k_folder,
                                                        tmp_path):
    """The code path of notebook 06 online, with local files standing in."""
    model, tokenizer = models.load_policy(preset="cpu")
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    model, tokenizer = models.load_policy(str(tmp_path / "model"))
    data = tasks.hub_prompt_dataset(str(gsm8k_folder), config=None)
    data = data.filter(lambda row: len(row["prompt"]) < 50)  # tiny model
    trainer = recipes.grpo_trainer(
        "cpu", output_dir=tmp_path / "run", model=model, tokenizer=tokenizer,
        max_steps=2, per_device_train_batch_size=4, num_generations=4,
        steps_per_generation=1,
        max_prompt_length=64, eval_strategy="no", eval_on_start=False,
        reward_funcs=[tasks.final_number_reward], train_dataset=data,
        disable_tqdm=True)
    trainer.train()
    assert trainer.state.log_history[-1]["generation/calls"] == 2
