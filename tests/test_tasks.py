"""The toy world: tokenizer, datasets and rewards."""

import pytest
from transformers import AutoTokenizer

from kit import tasks


def test_tokenizer_is_one_token_per_character(tokenizer):
    ids = tokenizer("07+35=42")["input_ids"]
    assert ids[0] == tokenizer.bos_token_id
    assert len(ids) == 1 + len("07+35=42")
    assert tokenizer.decode(ids, skip_special_tokens=True) == "07+35=42"


def test_tokenizer_has_the_special_tokens(tokenizer):
    assert tokenizer.pad_token == "<pad>"
    assert tokenizer.bos_token == "<bos>"
    assert tokenizer.eos_token == "<eos>"
    assert len({tokenizer.pad_token_id, tokenizer.bos_token_id,
                tokenizer.eos_token_id}) == 3


def test_tokenizer_saves_and_reloads(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    text = ["12+34=46", "99+99=198"]
    assert again(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert again.pad_token_id == tokenizer.pad_token_id
    assert again.decode(again("5+5=10")["input_ids"],
                        skip_special_tokens=True) == "5+5=10"


@pytest.mark.parametrize("make, columns", [
    (tasks.sft_dataset, ["prompt", "completion"]),
    (tasks.preference_dataset, ["prompt", "chosen", "rejected"]),
    (tasks.prompt_dataset, ["prompt", "answer"]),
])
def test_dataset_columns_and_determinism(make, columns):
    first = make("train", n=50, seed=3)
    assert first.column_names == columns
    assert len(first) == 50
    assert first.to_dict() == make("train", n=50, seed=3).to_dict()
    assert first.to_dict() != make("train", n=50, seed=4).to_dict()


def test_held_out_prompts_never_appear_in_training():
    train = set(tasks.prompt_dataset("train")["prompt"])
    test = set(tasks.prompt_dataset("test")["prompt"])
    assert len(test) == tasks.NUM_HELD_OUT
    assert len(train) == tasks.NUM_PAIRS - tasks.NUM_HELD_OUT
    assert not train & test


def test_answers_are_the_sums():
    for row in tasks.sft_dataset("test", n=100):
        a, b = row["prompt"].rstrip("=").split("+")
        assert row["completion"] == str(int(a) + int(b))
        assert len(row["prompt"]) == 6  # fixed width: no padding needed


def test_rejected_answers_are_plausible_mistakes():
    data = tasks.preference_dataset("train", n=500)
    for row in data:
        assert row["rejected"] != row["chosen"]
        assert row["rejected"].isdigit()
        assert abs(int(row["rejected"]) - int(row["chosen"])) in (1, 9, 10, 11)


def test_every_near_miss_gives_one_row_per_mistake():
    one = tasks.preference_dataset("train", n=50)
    every = tasks.preference_dataset("train", n=50, every_near_miss=True)
    assert set(every["prompt"]) == set(one["prompt"])  # the same sums
    for prompt in one["prompt"]:
        a, b = map(int, prompt.rstrip("=").split("+"))
        misses = sorted(int(row["rejected"]) - (a + b) for row in every
                        if row["prompt"] == prompt)
        # each near miss once; only those below 0 are left out
        assert misses == [d for d in (-11, -10, -9, -1, 1, 9, 10, 11)
                          if a + b + d >= 0]
    assert tasks.preference_dataset("train", n=50, every_near_miss=True,
                                    seed=1)[:] != every[:]  # seeded


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="split"):
        tasks.sft_dataset("validation")


def test_correctness_reward():
    rewards = tasks.correctness_reward(
        ["01+02=", "10+10=", "50+50="], ["3", "21", " 100"],
        answer=["3", "20", "100"])
    assert rewards == [1.0, 0.0, 1.0]


def test_format_reward():
    rewards = tasks.format_reward(
        ["p"] * 5, ["42", "4+2", "", "1234", "7"])
    assert rewards == [1.0, 0.0, 0.0, 0.0, 1.0]


def test_correctness_reward_compares_int_answers_as_text():
    # An `answer` column of ints (a dataset read from CSV, say) once scored
    # every completion 0.0.
    assert tasks.correctness_reward(["01+41=", "03+04="], ["42", " 8"],
                                    answer=[42, 7]) == [1.0, 0.0]


def test_greedy_accuracy_matches_int_answers(policy):
    from datasets import Dataset
    from kit.models import greedy_accuracy
    held_out = tasks.prompt_dataset("test", n=50)
    as_ints = Dataset.from_dict({"prompt": held_out["prompt"],
                                 "answer": [int(a) for a in
                                            held_out["answer"]]})
    accuracy = greedy_accuracy(*policy, held_out)
    assert accuracy > 0
    assert greedy_accuracy(*policy, as_ints) == accuracy


def test_unknown_characters_become_unk_and_only_they_are_counted(tokenizer):
    """What S6 is about: the toy tokenizer knows digits, + - = only."""
    from kit.trainers.guards import _unknown_spans
    ids = tokenizer(["42 apples", "42 pears!"])["input_ids"]
    assert ids[0] == ids[1]  # the same tokens: the check must catch it
    lost = _unknown_spans(tokenizer, ["42 pears!", "01+02="],
                          tokenizer.unk_token_id)
    assert lost == {"42 pears!": list(" pears!")}


def test_a_tokenizer_without_unk_token_is_not_checked(tokenizer):
    import copy
    import warnings

    from datasets import Dataset

    from kit.trainers.guards import warn_unknown_text
    data = Dataset.from_dict({"prompt": ["What is 3 plus 4?"]})
    with pytest.warns(UserWarning, match="1 of 1 rows"):
        warn_unknown_text("train_dataset", tokenizer, data, ["prompt"])
    no_unk = copy.deepcopy(tokenizer)
    no_unk.unk_token = None  # as byte-fallback tokenizers: nothing is lost
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_unknown_text("train_dataset", no_unk, data, ["prompt"])
